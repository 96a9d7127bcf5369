-- Kubeflow reads the user's identity from the kubeflow-userid header, and profiles are owned by
-- OpenShift user names. Only oauth-proxy may establish it: drop whatever the client sent, then
-- derive it from the two headers the proxy writes for a browser session (openshift/oauth-proxy,
-- oauthproxy.go): x-forwarded-user = the name before its first "@", x-forwarded-email = the name,
-- with "@cluster.local" appended when the name holds no "@". (The proxy authenticates no bearer
-- token: kfocp does not give it --openshift-delegate-urls.)
-- So the name is x-forwarded-user when the e-mail is that plus "@cluster.local", and otherwise
-- the e-mail itself when it starts with x-forwarded-user .. "@". Any other pair is not what the
-- proxy sends, and gets no kubeflow-userid. x-forwarded-user alone is not the name: it cuts
-- "alice@example.com" down to "alice".
local SUFFIX = "@cluster.local"

function kfocp_userid(user, email)
  if user == nil or user == "" or email == nil or email == "" then
    return nil
  end
  if email == user .. SUFFIX then
    return user
  end
  if not string.find(user, "@", 1, true) and string.sub(email, 1, #user + 1) == user .. "@" then
    return email
  end
  return nil
end

function envoy_on_request(request_handle)
  local headers = request_handle:headers()
  headers:remove("kubeflow-userid")
  local userid = kfocp_userid(headers:get("x-forwarded-user"), headers:get("x-forwarded-email"))
  if userid ~= nil then
    headers:add("kubeflow-userid", userid)
  end
end
