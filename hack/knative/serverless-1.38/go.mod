// The Knative operator the Knative judge runs for OpenShift Serverless 1.38 (channel stable-1.38,
// which kfocp subscribes to from OpenShift 4.16 on): the knative.dev/operator Serverless vendors at
// openshift-knative/serverless-operator main 02f6bc2c4dc6dc7509fd93379c8a6e90f4b5425f (go.mod;
// project.yaml `version: 1.38.0`, `serving: knative-v1.21`). Nothing is built from this folder; see
// ../go.mod and hack/knative_operator.py.
module kfocp.io/hack/knative/serverless138

go 1.24

require knative.dev/operator v0.48.1
