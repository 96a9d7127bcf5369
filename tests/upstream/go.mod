// The upstream Go modules docs/contracts.md cites with `go:` and the tests read as oracles
// (tests/gomod.py). Nothing is built from here: `go mod download` in this folder fetches them into
// the module cache, and go.sum pins each version's content.
module kfocp.io/tests/upstream

go 1.24

require (
	github.com/NVIDIA/gpu-operator v0.0.0-20250917190837-d73a0086a6ba // tag v25.3.4
	github.com/cert-manager/cert-manager v1.21.2
	github.com/envoyproxy/go-control-plane/envoy v1.37.1-0.20260713214202-ca8ce173c36f // the Envoy API istio.io/istio below requires
	github.com/kserve/kserve v0.15.0
	github.com/prometheus-operator/prometheus-operator v0.81.0 // the PrometheusRule and ServiceMonitor CRDs of the monitoring API the GPU operator requires (hack/gpu_operator.py)
	istio.io/api v1.31.0-rc.0.0.20260824154656-b943409680a7 // the Istio API istio.io/istio below requires
	istio.io/istio v0.0.0-20260827124520-eed52ebb66ad // commit eed52ebb66ad, as hack/istio builds istioctl from
	knative.dev/networking v0.0.0-20240716111826-bab7f2a3e556 // Knative 1.15 (what knative.dev/serving v0.42.2 requires)
	knative.dev/operator v0.42.2 // Knative 1.15 (OpenShift Serverless 1.35)
	knative.dev/serving v0.42.2 // Knative Serving 1.15
)
