// Command mao-judge runs machine-api-operator's MachineSet admission webhooks (pkg/webhooks:
// the defaulting one, then the validating one, as the API server calls them on create) on
// MachineSets read from stdin, for one cloud platform.
//
// The webhooks read the cluster's Infrastructure and DNS objects (config.openshift.io/v1,
// name "cluster") through a kubeconfig; this command serves the two from a loopback server of its
// own, made from the platform, region and infrastructure name given.
//
// stdin: {"platform": "AWS"|"Azure"|"GCP", "region": "...", "infrastructureName": "...",
//
//	"machineSets": [{...}]}
//
// stdout: [{"name": ..., "defaulted": {...}, "errors": [...], "warnings": [...]}]
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	jsonpatch "github.com/evanphx/json-patch/v5"
	configv1 "github.com/openshift/api/config/v1"
	"github.com/openshift/machine-api-operator/pkg/webhooks"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

type input struct {
	Platform           configv1.PlatformType `json:"platform"`
	Region             string                `json:"region"`
	InfrastructureName string                `json:"infrastructureName"`
	MachineSets        []json.RawMessage     `json:"machineSets"`
}

type verdict struct {
	Name      string          `json:"name"`
	Defaulted json.RawMessage `json:"defaulted"`
	Errors    []string        `json:"errors"`
	Warnings  []string        `json:"warnings"`
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
	stop := serveClusterConfig(in)
	defer stop()
	defaulter, err := webhooks.NewMachineSetDefaulter()
	if err != nil {
		fail("machine-api-operator's MachineSet defaulter: %v", err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		fail("%v", err)
	}
	// an empty cluster: the validator only warns when the credentials Secret is missing
	cluster := fake.NewClientBuilder().WithScheme(scheme).Build()
	validator, err := webhooks.NewMachineSetValidator(cluster, featuregate.NewFeatureGate())
	if err != nil {
		fail("machine-api-operator's MachineSet validator: %v", err)
	}
	out := []verdict{}
	for _, raw := range in.MachineSets {
		out = append(out, judge(defaulter, validator, raw))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("write: %v", err)
	}
}

func judge(defaulter, validator *admission.Webhook, raw json.RawMessage) verdict {
	var meta struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &meta)
	v := verdict{Name: meta.Metadata.Name, Defaulted: raw, Errors: []string{}, Warnings: []string{}}
	response := defaulter.Handle(context.Background(), request(raw, meta.Metadata))
	v.Warnings = append(v.Warnings, response.Warnings...)
	if !response.Allowed {
		v.Errors = append(v.Errors, "defaulting: "+response.Result.Message)
		return v
	}
	if len(response.Patches) > 0 {
		ops, err := json.Marshal(response.Patches)
		if err == nil {
			var patch jsonpatch.Patch
			if patch, err = jsonpatch.DecodePatch(ops); err == nil {
				v.Defaulted, err = patch.Apply(raw)
			}
		}
		if err != nil {
			v.Errors = append(v.Errors, "applying the defaults: "+err.Error())
			return v
		}
	}
	response = validator.Handle(context.Background(), request(v.Defaulted, meta.Metadata))
	v.Warnings = append(v.Warnings, response.Warnings...)
	if !response.Allowed {
		v.Errors = append(v.Errors, response.Result.Message)
	}
	return v
}

func request(raw []byte, meta metav1.ObjectMeta) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "kfocp",
		Kind:      metav1.GroupVersionKind{Group: "machine.openshift.io", Version: "v1beta1", Kind: "MachineSet"},
		Resource:  metav1.GroupVersionResource{Group: "machine.openshift.io", Version: "v1beta1", Resource: "machinesets"},
		Name:      meta.Name,
		Namespace: meta.Namespace,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

// serveClusterConfig serves the Infrastructure and DNS objects the webhooks read, on loopback,
// and points KUBECONFIG at it.
func serveClusterConfig(in input) func() {
	status := configv1.PlatformStatus{Type: in.Platform}
	switch in.Platform {
	case configv1.AWSPlatformType:
		status.AWS = &configv1.AWSPlatformStatus{Region: in.Region}
	case configv1.GCPPlatformType:
		status.GCP = &configv1.GCPPlatformStatus{Region: in.Region, ProjectID: "kfocp"}
	case configv1.AzurePlatformType:
		status.Azure = &configv1.AzurePlatformStatus{ResourceGroupName: in.InfrastructureName + "-rg",
			CloudName: configv1.AzurePublicCloud}
	}
	infra := configv1.Infrastructure{Status: configv1.InfrastructureStatus{
		InfrastructureName: in.InfrastructureName, PlatformStatus: &status}}
	infra.APIVersion, infra.Kind, infra.Name = "config.openshift.io/v1", "Infrastructure", "cluster"
	dns := configv1.DNS{Spec: configv1.DNSSpec{PublicZone: &configv1.DNSZone{ID: "public"}}}
	dns.APIVersion, dns.Kind, dns.Name = "config.openshift.io/v1", "DNS", "cluster"
	objects := map[string]interface{}{
		"/apis/config.openshift.io/v1/infrastructures/cluster": infra,
		"/apis/config.openshift.io/v1/dnses/cluster":           dns,
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		obj, ok := objects[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}))
	dir, err := os.MkdirTemp("", "mao-judge")
	if err != nil {
		fail("%v", err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	text := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q}}]\n"+
		"users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", server.URL)
	if err := os.WriteFile(kubeconfig, []byte(text), 0o600); err != nil {
		fail("%v", err)
	}
	os.Setenv("KUBECONFIG", kubeconfig)
	return func() {
		server.Close()
		os.RemoveAll(dir)
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "mao-judge: "+format+"\n", args...)
	os.Exit(1)
}
