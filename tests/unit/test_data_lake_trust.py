"""How AWS and Microsoft Entra decide whether a token is trusted, as their documentation writes it,
carried as code; the data lake's trust documents are judged by it here and, with tokens the real
API server mints, in tests/integration/test_data_lake.py.

AWS (awsdocs/iam-user-guide at e2b8637a825b9f292bb04af61277d067dfcc5676, the guide's last
published sources):
- doc_source/id_roles_create_for-idp_oidc.md: a role for an OIDC provider trusts
  `"Federated": "arn:aws:iam::<account>:oidc-provider/<provider URL without https://>"` for the
  action `sts:AssumeRoleWithWebIdentity`, with conditions on `<provider>:aud` and `<provider>:sub`
  (its example: "token.actions.githubusercontent.com:aud": "sts.amazonaws.com").
- doc_source/id_roles_providers_create_oidc.md: the provider URL "must begin with https://" and
  "is case-sensitive".
- doc_source/reference_policies_elements_condition_operators.md: `StringEquals` is "Exact matching,
  case sensitive".
- doc_source/reference_policies_multi-value-conditions.md: "If your policy has multiple condition
  operators or multiple keys attached to a single condition operator, the conditions are evaluated
  using a logical AND. If a single condition operator includes multiple values for one key, that
  condition operator is evaluated using a logical OR."

Microsoft Entra (Azure/azure-workload-identity docs/book/src/topics/federated-identity-credential.md
at 04d01a2fc7f5024290a38f6ccaf69561cf70455d): a federated identity credential names the
`issuer`, the `subject` `system:serviceaccount:<namespace>:<name>` and the `audiences`
(`api://AzureADTokenExchange`); "Not all service account tokens can be exchanged ... A federated
identity credential between an existing Kubernetes service account and an AAD application or
user-assigned managed identity has to be created in advance".
"""
import pytest

WEB_IDENTITY = "sts:AssumeRoleWithWebIdentity"


def _as_list(value):
    return value if isinstance(value, list) else [value]


def aws_trust_admits(policy, claims, account):
    """Whether the role trust policy lets a token with these claims (iss, sub, aud) assume the role
    of `account` through AssumeRoleWithWebIdentity."""
    audiences = _as_list(claims["aud"])
    assert len(audiences) == 1, "a token for one audience"
    provider = claims["iss"][len("https://"):] if claims["iss"].startswith("https://") else None
    if provider is None:
        return False
    context = {provider + ":sub": claims["sub"], provider + ":aud": audiences[0]}
    for statement in _as_list(policy["Statement"]):
        federated = _as_list((statement.get("Principal") or {}).get("Federated") or [])
        if statement.get("Effect") != "Allow" or WEB_IDENTITY not in _as_list(statement.get("Action")):
            continue
        if not any(f.startswith("arn:") and f.split(":")[4] == account and f.endswith(":oidc-provider/" + provider)
                   for f in federated):
            continue
        if all(_condition(operator, keys, context) for operator, keys in (statement.get("Condition") or {}).items()):
            return True
    return False


def _condition(operator, keys, context):
    assert operator == "StringEquals", "only StringEquals is carried here"
    # every key (AND); one of each key's values (OR); exact, case-sensitive
    return all(key in context and context[key] in _as_list(values) for key, values in keys.items())


def azure_credential_admits(credential, claims):
    """Whether a federated identity credential admits a token with these claims."""
    return (credential["issuer"] == claims["iss"] and credential["subject"] == claims["sub"]
            and bool(set(credential["audiences"]) & set(_as_list(claims["aud"]))))


GITHUB = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Action": WEB_IDENTITY,
    "Principal": {"Federated": "arn:aws:iam::111122223333:oidc-provider/token.actions.githubusercontent.com"},
    "Condition": {"StringEquals": {"token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
                                   "token.actions.githubusercontent.com:sub":
                                       "repo:GitHubOrg/GitHubRepo:ref:refs/heads/GitHubBranch"}}}]}
GITHUB_CLAIMS = {"iss": "https://token.actions.githubusercontent.com", "aud": "sts.amazonaws.com",
                 "sub": "repo:GitHubOrg/GitHubRepo:ref:refs/heads/GitHubBranch"}


@pytest.mark.parametrize("change, admitted", [
    ({}, True),
    ({"sub": "repo:GitHubOrg/GitHubRepo:ref:refs/heads/other"}, False),
    ({"sub": "repo:githuborg/GitHubRepo:ref:refs/heads/GitHubBranch"}, False),  # case-sensitive
    ({"aud": "sts.amazonaws.com.evil"}, False),
    ({"iss": "https://token.actions.githubusercontent.com.evil"}, False),
    ({"iss": "http://token.actions.githubusercontent.com"}, False),
])
def test_the_guides_github_example_admits_only_its_own_token(change, admitted):
    assert aws_trust_admits(GITHUB, dict(GITHUB_CLAIMS, **change), "111122223333") is admitted


def test_another_account_is_not_admitted():
    assert not aws_trust_admits(GITHUB, GITHUB_CLAIMS, "444455556666")


def test_several_values_of_one_key_are_alternatives():
    policy = {"Statement": [dict(GITHUB["Statement"][0], Condition={"StringEquals": {
        "token.actions.githubusercontent.com:sub": ["a", "b"],
        "token.actions.githubusercontent.com:aud": "sts.amazonaws.com"}})]}
    assert aws_trust_admits(policy, dict(GITHUB_CLAIMS, sub="b"), "111122223333")
    assert not aws_trust_admits(policy, dict(GITHUB_CLAIMS, sub="c"), "111122223333")


def test_an_azure_credential_admits_its_subject_only():
    credential = {"issuer": "https://issuer.example", "subject": "system:serviceaccount:a:default-editor",
                  "audiences": ["api://AzureADTokenExchange"]}
    claims = {"iss": "https://issuer.example", "sub": "system:serviceaccount:a:default-editor",
              "aud": ["api://AzureADTokenExchange"]}
    assert azure_credential_admits(credential, claims)
    assert not azure_credential_admits(credential, dict(claims, sub="system:serviceaccount:b:default-editor"))
    assert not azure_credential_admits(credential, dict(claims, aud=["sts.amazonaws.com"]))
    assert not azure_credential_admits(credential, dict(claims, iss="https://other.example"))
