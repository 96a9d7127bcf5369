"""Table tests of the secret masking of module results (module_utils/runner.py): by field (a
Secret's data, an OAuthClient's secret) and by value (the no_log options), for the old state as
well as the new."""
import base64
import json

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.runner import MASK, mask_diff, redacted_forms, scrub


def b64(text):
    return base64.b64encode(text.encode()).decode()


def secret(**data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"},
            "data": dict((k, b64(v)) for k, v in data.items())}


def oauth_client(value):
    return {"apiVersion": "oauth.openshift.io/v1", "kind": "OAuthClient", "metadata": {"name": "kubeflow"},
            "secret": value, "redirectURIs": ["https://x/oauth2/callback"]}


def configmap(value):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"},
            "data": {"config": "password=%s\nuser=me" % value, "other": "plain"}}


@pytest.mark.parametrize("before, after, old, new", [
    # a Secret's data, old and new, whatever the no_log options say
    (secret(client_secret="OLD-secret-1234"), secret(client_secret="NEW-secret-5678"), "OLD-secret-1234",
     "NEW-secret-5678"),
    # an OAuthClient's secret: the new value is a no_log value, the old one is not
    (oauth_client("OLD-oauth-9999"), oauth_client("NEW-oauth-0000"), "OLD-oauth-9999", "NEW-oauth-0000"),
    # any field whose new value holds a no_log value: its old value is masked too
    (configmap("OLD-pass-4321"), configmap("NEW-pass-8765"), "OLD-pass-4321", "NEW-pass-8765"),
])
def test_old_and_new_secret_values_are_masked(before, after, old, new):
    entry = {"before": before, "after": after}
    seen = mask_diff(entry, redacted_forms([new]))
    text = json.dumps(entry)
    for value in (old, new, b64(old), b64(new)):
        assert value not in text, (value, text)
    assert MASK + " (changed)" in text
    # what was masked is reported, so that messages and Ansible's output can be masked too
    assert any(old in value or b64(old) in value for value in seen)


def test_unchanged_secret_data_shows_no_change_and_other_fields_stay():
    entry = {"before": secret(a="same-value-1"), "after": secret(a="same-value-1")}
    entry["after"]["metadata"]["labels"] = {"x": "y"}
    mask_diff(entry, set())
    assert entry["before"]["data"] == {"a": MASK} and entry["after"]["data"] == {"a": MASK}
    assert entry["after"]["metadata"]["labels"] == {"x": "y"}


def test_a_configmap_without_secrets_is_left_as_it_is():
    entry = {"before": configmap("x"), "after": configmap("y")}
    original = json.loads(json.dumps(entry))
    assert mask_diff(entry, redacted_forms(["unrelated-secret"])) == set()
    assert entry == original


def test_created_secret_has_no_before_and_its_string_data_is_masked():
    after = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": "brand-new-value"}}
    entry = {"before": {}, "after": after}
    mask_diff(entry, set())
    assert "brand-new-value" not in json.dumps(entry)


def test_scrub_replaces_every_form_in_messages():
    forms = redacted_forms(["hunter2-secret"])
    out = scrub({"msg": "bad hunter2-secret", "objects": [{"message": "x %s" % b64("hunter2-secret")}]}, forms)
    assert "hunter2" not in json.dumps(out) and b64("hunter2-secret") not in json.dumps(out)


@pytest.mark.parametrize("values, forms", [
    # a base64 value (Secret data): as it is, encoded once more, and decoded
    ([b64("plain-text-value")], {b64("plain-text-value"), b64(b64("plain-text-value")), "plain-text-value"}),
    # not base64: as it is and encoded
    (["not base64!"], {"not base64!", b64("not base64!")}),
    # decoded to fewer than 4 characters: noise, not added
    ([b64("abc")], {b64("abc"), b64(b64("abc"))}),
    # nothing to hide
    ([None, "", 5], set()),
    (None, set()),
])
def test_redacted_forms_decode_base64_values(values, forms):
    assert redacted_forms(values) == forms


def test_a_base64_no_log_value_masks_its_plain_text_in_messages():
    out = scrub({"msg": "login failed for plain-text-value"}, redacted_forms([b64("plain-text-value")]))
    assert "plain-text-value" not in json.dumps(out)
