-- Kubeflow reads the user's identity from the kubeflow-userid header. Only oauth-proxy may
-- establish it: drop whatever the client sent, then set it from x-forwarded-user, which the
-- proxy writes after logging the user in. No x-forwarded-user means no kubeflow-userid.
function envoy_on_request(request_handle)
  local headers = request_handle:headers()
  headers:remove("kubeflow-userid")
  local user = headers:get("x-forwarded-user")
  if user ~= nil and user ~= "" then
    headers:add("kubeflow-userid", user)
  end
end
