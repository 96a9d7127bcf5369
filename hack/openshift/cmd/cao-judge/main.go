// Command cao-judge runs cluster-autoscaler-operator's own code on objects read from stdin:
// the ClusterAutoscaler and MachineAutoscaler validation of its admission webhooks, and the
// arguments its controller gives the cluster-autoscaler for a ClusterAutoscaler.
//
// stdin: {"clusterAutoscaler": {...} or null, "machineAutoscalers": [{...}]}
// stdout: {"clusterAutoscaler": {"errors": [...], "warnings": [...], "args": [...]},
//
//	"machineAutoscalers": [{"name": ..., "errors": [...], "warnings": [...]}]}
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	autoscalingv1 "github.com/openshift/cluster-autoscaler-operator/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/openshift/cluster-autoscaler-operator/pkg/apis/autoscaling/v1beta1"
	"github.com/openshift/cluster-autoscaler-operator/pkg/controller/clusterautoscaler"
	"github.com/openshift/cluster-autoscaler-operator/pkg/controller/machineautoscaler"
	"github.com/openshift/cluster-autoscaler-operator/pkg/util"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// The operator's defaults (pkg/operator/config.go): the singleton's name, the autoscaler's
// namespace, cloud provider and verbosity.
var config = clusterautoscaler.Config{Name: "default", Namespace: "openshift-machine-api",
	CloudProvider: "clusterapi", Verbosity: 1}

type input struct {
	ClusterAutoscaler  json.RawMessage   `json:"clusterAutoscaler"`
	MachineAutoscalers []json.RawMessage `json:"machineAutoscalers"`
}

type verdict struct {
	Name     string   `json:"name,omitempty"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
	Args     []string `json:"args,omitempty"`
}

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read stdin: %v", err)
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		fail("stdin: %v", err)
	}
	scheme := runtime.NewScheme()
	if err := autoscalingv1.SchemeBuilder.AddToScheme(scheme); err != nil {
		fail("%v", err)
	}
	if err := autoscalingv1beta1.SchemeBuilder.AddToScheme(scheme); err != nil {
		fail("%v", err)
	}
	out := map[string]interface{}{}
	if len(in.ClusterAutoscaler) > 0 && string(in.ClusterAutoscaler) != "null" {
		ca := &autoscalingv1.ClusterAutoscaler{}
		v := verdict{Errors: strict(in.ClusterAutoscaler, ca)}
		v.Name = ca.Name
		response := clusterautoscaler.NewValidator(config.Name, nil, scheme).Validate(ca)
		v.add(response)
		v.Args = clusterautoscaler.AutoscalerArgs(ca, &config)
		out["clusterAutoscaler"] = v
	}
	mas := []verdict{}
	for _, raw := range in.MachineAutoscalers {
		ma := &autoscalingv1beta1.MachineAutoscaler{}
		v := verdict{Errors: strict(raw, ma)}
		v.Name = ma.Name
		v.add(machineautoscaler.NewValidator(nil, scheme).Validate(ma))
		mas = append(mas, v)
	}
	out["machineAutoscalers"] = mas
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("write: %v", err)
	}
}

// strict decodes raw into obj and returns the fields the typed object does not know.
func strict(raw []byte, obj interface{}) []string {
	out := []string{}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, obj)
	if err != nil {
		return append(out, err.Error())
	}
	for _, e := range strictErrs {
		out = append(out, e.Error())
	}
	return out
}

func (v *verdict) add(response util.ValidatorResponse) {
	if response.Errors != nil {
		for _, err := range response.Errors.Errors() {
			v.Errors = append(v.Errors, err.Error())
		}
	}
	v.Warnings = append([]string{}, response.Warnings...)
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "cao-judge: "+format+"\n", args...)
	os.Exit(1)
}
