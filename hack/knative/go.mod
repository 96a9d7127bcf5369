// The Knative operator the tests run as the judge of the KnativeServing kfocp writes
// (hack/knative_operator.py): the knative.dev/operator OpenShift Serverless 1.37 vendors
// (openshift-knative/serverless-operator release-1.37 c9356eaa6eeaa2eb134b8c633d916104e50f2571,
// go.mod; Knative 1.17, project.yaml `serving: knative-v1.17`), the channel stable-1.37 kfocp
// subscribes to on 4.14 and 4.15 and that is published for every OpenShift minor kfocp supports.
// Nothing is built from this folder: hack/knative_operator.py builds cmd/operator in the module's
// own directory with its go.mod and go.sum, and this go.sum pins the module's content (its
// manifests, kodata, and CRDs). The proxy does not serve the pseudo-version Serverless vendors, so
// this is its branch's release one commit before it (see hack/knative_operator.py).
module kfocp.io/hack/knative

go 1.24

require knative.dev/operator v0.44.8
