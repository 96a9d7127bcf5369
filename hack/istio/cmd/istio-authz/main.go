// Command istio-authz prints the Envoy RBAC HTTP filters istiod gives a sidecar's inbound listener
// for the AuthorizationPolicies of a cluster: Istio's own code from parsing to translation.
//
// Input on stdin (JSON):
//
//	{"namespace": "team-a", "labels": {"app": "nb"}, "rootNamespace": "istio-system",
//	 "trustDomain": "cluster.local", "trustDomainAliases": [], "policies": [<AuthorizationPolicy>, ...]}
//
// Each policy (security.istio.io/v1 or v1beta1, as the API server returns it) is parsed and
// validated as istioctl and istiod's validation webhook do (pilot/pkg/config/kube/crd ParseInputs);
// an invalid one is reported in "invalid" and left out, since the webhook would refuse it. The rest
// go into an in-memory config store, become the mesh's AuthorizationPolicies
// (model.GetAuthorizationPolicies, with the root namespace of the mesh config), are selected for
// the workload (namespace and labels: model.PolicyMatcherForProxy with the root namespace, as
// pilot/pkg/networking/plugin/authz does for a sidecar) and translated by
// pilot/pkg/security/authz/builder into the HTTP filters, in the order of the filter chain:
// AUDIT, DENY, ALLOW (one RBAC filter per action present). CUSTOM policies go to ext_authz; their
// RBAC filters are printed apart, in "custom".
//
// Output (JSON): {"filters": [HttpFilter as protojson with proto names], "custom": [...],
// "invalid": {"ns/name": "error"}}.
//
// With "workloads": [{"namespace": ..., "labels": {...}}, ...] in place of namespace and labels, the
// same policies are translated for each workload: {"workloads": [{"filters", "custom"}, ...],
// "invalid": {...}}.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pilot/pkg/config/memory"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/pkg/networking"
	"istio.io/istio/pilot/pkg/networking/plugin/authz"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	"istio.io/istio/pkg/config/schema/collections"
)

type workload struct {
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
}

type input struct {
	Namespace          string            `json:"namespace"`
	Labels             map[string]string `json:"labels"`
	Workloads          []workload        `json:"workloads"`
	RootNamespace      string            `json:"rootNamespace"`
	TrustDomain        string            `json:"trustDomain"`
	TrustDomainAliases []string          `json:"trustDomainAliases"`
	Policies           []json.RawMessage `json:"policies"`
}

func main() {
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read stdin: %v", err)
	}
	var in input
	if err := json.Unmarshal(data, &in); err != nil {
		fail("decode the input: %v", err)
	}
	workloads := in.Workloads
	if len(workloads) == 0 {
		workloads = []workload{{Namespace: in.Namespace, Labels: in.Labels}}
	}
	for i, w := range workloads {
		if w.Namespace == "" {
			fail("workloads[%d].namespace (or namespace): the workload's namespace is required", i)
		}
	}
	meshConfig := mesh.DefaultMeshConfig()
	if in.RootNamespace != "" {
		meshConfig.RootNamespace = in.RootNamespace
	}
	if in.TrustDomain != "" {
		meshConfig.TrustDomain = in.TrustDomain
	}
	meshConfig.TrustDomainAliases = in.TrustDomainAliases

	store := memory.Make(collections.Pilot)
	invalid := map[string]string{}
	for i, raw := range in.Policies {
		configs, _, err := crd.ParseInputs(string(raw))
		if err != nil {
			var meta struct {
				Metadata struct{ Name, Namespace string } `json:"metadata"`
			}
			_ = json.Unmarshal(raw, &meta)
			invalid[fmt.Sprintf("%s/%s", meta.Metadata.Namespace, meta.Metadata.Name)] = err.Error()
			continue
		}
		if len(configs) != 1 {
			fail("policies[%d]: not an AuthorizationPolicy", i)
		}
		if _, err := store.Create(configs[0]); err != nil {
			fail("policies[%d]: %v", i, err)
		}
	}
	env := &model.Environment{ConfigStore: store, Watcher: meshwatcher.NewTestWatcher(meshConfig)}
	push := model.NewPushContext()
	push.Mesh = meshConfig
	push.AuthzPolicies = model.GetAuthorizationPolicies(env)
	results := []map[string]interface{}{}
	for _, w := range workloads {
		proxy := &model.Proxy{Type: model.SidecarProxy, ConfigNamespace: w.Namespace, Labels: w.Labels,
			Metadata: &model.NodeMetadata{Namespace: w.Namespace, Labels: w.Labels}}
		// a sidecar's inbound listener: useFilterState is for waypoints only (listener_builder.go)
		local := authz.NewBuilder(authz.Local, push, proxy, false).BuildHTTP(networking.ListenerClassSidecarInbound)
		custom := authz.NewBuilder(authz.Custom, push, proxy, false).BuildHTTP(networking.ListenerClassSidecarInbound)
		results = append(results, map[string]interface{}{"filters": encode(local), "custom": encode(custom)})
	}
	var out map[string]interface{}
	if len(in.Workloads) == 0 {
		out = results[0]
	} else {
		out = map[string]interface{}{"workloads": results}
	}
	out["invalid"] = invalid
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fail("write: %v", err)
	}
}

func encode(filters []*hcm.HttpFilter) []json.RawMessage {
	out := []json.RawMessage{}
	for _, f := range filters {
		b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(f)
		if err != nil {
			fail("encode filter %s: %v", f.GetName(), err)
		}
		out = append(out, json.RawMessage(b))
	}
	return out
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "istio-authz: "+format+"\n", args...)
	os.Exit(1)
}
