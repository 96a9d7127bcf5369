// The Argo CD modules docs/contracts.md cites with `go:` (the version hack/argocd.py builds). Kept
// apart from ../go.mod because argo-cd's go.mod asks for go 1.27: `GOTOOLCHAIN=go1.27.3 go mod
// download` in this folder fetches them, and go.sum pins each version's content.
module kfocp.io/tests/upstream/argocd

go 1.27.0

require (
	github.com/argoproj/argo-cd/gitops-engine/v3 v3.6.1
	github.com/argoproj/argo-cd/v3 v3.6.1
)
