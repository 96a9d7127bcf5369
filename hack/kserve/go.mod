// KServe's controller the tests run as the judge of the KServe kfocp installs (hack/kserve.py):
// github.com/kserve/kserve at the version of the kserve-controller image of the Kubeflow 26.03
// render (kserve/kserve-controller:v0.16.0 in ../shared/upstream/example-render-26.03.yaml.gz),
// and the Knative Serving whose CRDs the judge serves: knative.dev/serving v0.48.1, Knative
// Serving 1.21, which OpenShift Serverless 1.38 (channel stable-1.38) ships
// (openshift-knative/serverless-operator 02f6bc2c4dc6dc7509fd93379c8a6e90f4b5425f, project.yaml
// `serving: knative-v1.21`; the Knative operator it vendors is hack/knative/serverless-1.38's).
// Nothing is built from this folder: hack/kserve.py builds cmd/manager in KServe's own module
// directory with its go.mod and go.sum (-mod=readonly), after checking that directory's content
// against the hash this go.sum pins. knative.dev/net-kourier v0.48.0 (Kourier's controller of
// Knative 1.21) is read, not built: the ingress class it serves and what it reports on a KIngress
// (hack/knative_serving.py, tests/integration/test_knative_serving_judge.py).
module kfocp.io/hack/kserve

go 1.24

require (
	github.com/kserve/kserve v0.16.0
	knative.dev/net-kourier v0.48.0
	knative.dev/serving v0.48.1
)
