"""kfocp's Kubeflow operator: a small adapter that drives the collection's playbooks through
ansible-runner for the Kubeflow custom resource, and applies per-namespace and per-user objects in
process, with the collection's own builders and apply engine, when namespaces and Users appear."""

GROUP = "kfocp.io"
VERSION = "v1alpha1"
KIND = "Kubeflow"
PLURAL = "kubeflows"
API_VERSION = "%s/%s" % (GROUP, VERSION)
FINALIZER = "kfocp.io/uninstall"
RECONCILE_PERIOD_ANNOTATION = "ansible.sdk.operatorframework.io/reconcile-period"
