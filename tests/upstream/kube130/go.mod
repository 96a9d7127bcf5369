// The Kubernetes 1.30 modules docs/contracts.md cites with `go:`: OpenShift 4.17, the first release
// kfocp's profile self-service runs on (ValidatingAdmissionPolicy v1), is Kubernetes 1.30. Kept
// apart from ../go.mod so that its build list keeps these versions: `go mod download` in this
// folder fetches them, and go.sum pins each version's content.
module kfocp.io/tests/upstream/kube130

go 1.24

require (
	k8s.io/api v0.30.2
	k8s.io/apiserver v0.30.2
)
