// The upstream Go modules docs/contracts.md cites with `go:` and the tests read as oracles
// (tests/gomod.py). Nothing is built from here: `go mod download` in this folder fetches them into
// the module cache, and go.sum pins each version's content.
module kfocp.io/tests/upstream

go 1.24

require (
	github.com/NVIDIA/gpu-operator v0.0.0-20250917190837-d73a0086a6ba // tag v25.3.4
	github.com/cert-manager/cert-manager v1.21.2
	github.com/kserve/kserve v0.15.0
	knative.dev/operator v0.42.2 // Knative 1.15 (OpenShift Serverless 1.35)
	knative.dev/serving v0.42.2 // Knative Serving 1.15
)
