// Command openshift-sar reads the value of oauth-proxy's --openshift-sar flag on stdin and prints
// the Kubernetes authorization.k8s.io/v1 SubjectAccessReview that OpenShift asks its authorizer.
//
// oauth-proxy (providers/openshift/provider.go, encodeSARWithScope) adds "scopes": [] to the flag's
// JSON and POSTs it as it is to /apis/authorization.openshift.io/v1/subjectaccessreviews. The
// openshift-apiserver decodes it into openshift/api's authorization/v1 SubjectAccessReview (an
// unknown key is dropped) and turns its Action into authorizer attributes
// (openshift-apiserver, pkg/authorization/apiserver/registry/subjectaccessreview/rest.go and
// registry/util ToDefaultAuthorizationAttributes): the resource "a/b" is resource a, subresource b.
//
//	openshift-sar --user alice --group devs < flag.json
//
// prints {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": ...};
// with --dropped it also lists the keys the API server drops, on stderr.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	authorizationv1 "github.com/openshift/api/authorization/v1"
	kauthorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

type groups []string

func (g *groups) String() string     { return strings.Join(*g, ",") }
func (g *groups) Set(v string) error { *g = append(*g, v); return nil }

func main() {
	user := flag.String("user", "", "the user whose access is reviewed (oauth-proxy: the logged-in user)")
	var userGroups groups
	flag.Var(&userGroups, "group", "a group of the user (repeat)")
	flag.Parse()
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("read stdin: %v", err)
	}
	review, dropped, err := decode(data)
	if err != nil {
		fail("%v", err)
	}
	out := kauthorizationv1.SubjectAccessReview{Spec: toKubernetes(review.Action)}
	out.APIVersion, out.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	out.Spec.User, out.Spec.Groups = *user, userGroups
	result := map[string]interface{}{"review": out, "dropped": dropped}
	if err := json.NewEncoder(os.Stdout).Encode(result); err != nil {
		fail("write: %v", err)
	}
}

// decode reads the flag's JSON as oauth-proxy sends it and openshift-apiserver decodes it.
func decode(flagValue []byte) (*authorizationv1.SubjectAccessReview, []string, error) {
	var body map[string]interface{}
	if err := json.Unmarshal(flagValue, &body); err != nil {
		return nil, nil, fmt.Errorf("--openshift-sar is not a JSON object: %v", err)
	}
	body["scopes"] = []string{} // encodeSARWithScope
	withScopes, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	if err := authorizationv1.Install(scheme); err != nil {
		return nil, nil, err
	}
	gvk := authorizationv1.GroupVersion.WithKind("SubjectAccessReview")
	review := &authorizationv1.SubjectAccessReview{}
	if _, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode(withScopes, &gvk, review); err != nil {
		return nil, nil, fmt.Errorf("authorization.openshift.io/v1 SubjectAccessReview: %v", err)
	}
	// the keys the typed object does not keep: what the API server drops
	kept, err := json.Marshal(review)
	if err != nil {
		return nil, nil, err
	}
	var known map[string]interface{}
	if err := json.Unmarshal(kept, &known); err != nil {
		return nil, nil, err
	}
	dropped := []string{}
	for key := range body {
		if _, ok := known[key]; !ok && key != "apiVersion" && key != "kind" {
			dropped = append(dropped, key)
		}
	}
	sort.Strings(dropped)
	return review, dropped, nil
}

// toKubernetes is ToDefaultAuthorizationAttributes in the Kubernetes SubjectAccessReview's terms.
func toKubernetes(action authorizationv1.Action) kauthorizationv1.SubjectAccessReviewSpec {
	if action.IsNonResourceURL {
		return kauthorizationv1.SubjectAccessReviewSpec{
			NonResourceAttributes: &kauthorizationv1.NonResourceAttributes{Path: action.Path, Verb: action.Verb}}
	}
	resource, subresource, _ := strings.Cut(action.Resource, "/")
	return kauthorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &kauthorizationv1.ResourceAttributes{
		Namespace: action.Namespace, Verb: action.Verb, Group: action.Group, Version: action.Version,
		Resource: resource, Subresource: subresource, Name: action.ResourceName}}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "openshift-sar: "+format+"\n", args...)
	os.Exit(1)
}
