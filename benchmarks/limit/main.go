// Command limit is the benchmark's physical reference: it server-side applies a list of objects
// as fast as the API server takes them, with client-go and nothing else.
//
// No client-side rate limit (QPS < 0), HTTP/2 (client-go's default over TLS: every request
// multiplexed on one connection), responses in protobuf where the kind has it (Accept lists
// protobuf first, JSON for custom resources), a bounded pool of concurrent PATCHes.
//
// Phases, each sent concurrently, in the order a cluster needs them: CustomResourceDefinitions,
// then a wait (a watch) until every one is Established and discovery lists its kinds, then
// Namespaces, then everything else,
// then admission webhook configurations last. It does none of what makes an installer safe
// (ownership, labels, changed, prune); it measures what the API server can take.
//
//	limit -kubeconfig KUBECONFIG -objects OBJECTS.json [-workers 64]
//
// OBJECTS.json is {"objects": [...]}. Prints one JSON line: the total and each phase in seconds.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

const accept = "application/vnd.kubernetes.protobuf,application/json"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	objectsFile := flag.String("objects", "", `JSON file {"objects": [...]}`)
	workers := flag.Int("workers", 64, "concurrent requests")
	manager := flag.String("field-manager", "limit", "server-side apply field manager")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if *kubeconfig == "" || *objectsFile == "" {
		fmt.Fprintln(os.Stderr, "usage: limit -kubeconfig KUBECONFIG -objects OBJECTS.json [-workers N]")
		os.Exit(2)
	}
	if err := run(*kubeconfig, *objectsFile, *workers, *manager, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "limit:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, objectsFile string, workers int, manager string, timeout time.Duration) error {
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	data, err := os.ReadFile(objectsFile)
	if err != nil {
		return err
	}
	var doc struct {
		Objects []map[string]interface{} `json:"objects"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", objectsFile, err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.QPS = -1 // no client-side rate limit
	config.Burst = 0
	config.AcceptContentTypes = accept
	config.ContentType = "application/json"
	config.GroupVersion = &schema.GroupVersion{}
	config.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return err
	}

	var crds, namespaces, others, webhooks []map[string]interface{}
	for _, obj := range doc.Objects {
		switch obj["kind"] {
		case "CustomResourceDefinition":
			crds = append(crds, obj)
		case "Namespace":
			namespaces = append(namespaces, obj)
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			webhooks = append(webhooks, obj)
		default:
			others = append(others, obj)
		}
	}
	phases := map[string]float64{}
	mapper, err := newMapper(disco)
	if err != nil {
		return err
	}
	phases["discovery_s"] = since(started)
	if len(crds) > 0 {
		mark := time.Now()
		if err := applyAll(ctx, client, mapper, crds, workers, manager); err != nil {
			return err
		}
		phases["crds_s"] = since(mark)
		mark = time.Now()
		if err := waitEstablished(ctx, dyn, crds); err != nil {
			return err
		}
		phases["established_s"] = since(mark)
		mark = time.Now()
		if mapper, err = discovered(ctx, disco, crds); err != nil {
			return err
		}
		phases["rediscovery_s"] = since(mark)
	}
	for _, phase := range []struct {
		name string
		objs []map[string]interface{}
	}{{"namespaces_s", namespaces}, {"rest_s", others}, {"webhooks_s", webhooks}} {
		mark := time.Now()
		if err := applyAll(ctx, client, mapper, phase.objs, workers, manager); err != nil {
			return err
		}
		phases[phase.name] = since(mark)
	}
	phases["total_s"] = since(started)
	phases["objects"] = float64(len(doc.Objects))
	out, _ := json.Marshal(phases)
	fmt.Println(string(out))
	return nil
}

func since(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1e6 }

func newMapper(disco discovery.DiscoveryInterface) (meta.RESTMapper, error) {
	groups, err := restmapper.GetAPIGroupResources(disco)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	return restmapper.NewDiscoveryRESTMapper(groups), nil
}

// discovered reads discovery until it lists every served version of every CRD's kind: the API
// server adds them shortly after it sets Established.
func discovered(ctx context.Context, disco discovery.DiscoveryInterface, crds []map[string]interface{}) (meta.RESTMapper, error) {
	for {
		mapper, err := newMapper(disco)
		if err != nil {
			return nil, err
		}
		missing := ""
		for _, crd := range crds {
			spec, _ := crd["spec"].(map[string]interface{})
			group, _ := spec["group"].(string)
			names, _ := spec["names"].(map[string]interface{})
			kind, _ := names["kind"].(string)
			versions, _ := spec["versions"].([]interface{})
			for _, v := range versions {
				version, _ := v.(map[string]interface{})
				name, _ := version["name"].(string)
				if served, ok := version["served"].(bool); ok && !served {
					continue
				}
				if _, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, name); err != nil {
					missing = kind
				}
			}
		}
		if missing == "" {
			return mapper, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("discovery does not list %s in time: %w", missing, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// path is the object's URL path, from the API server's discovery.
func path(mapper meta.RESTMapper, obj *unstructured.Unstructured) (string, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	p := "/apis/" + gvk.Group + "/" + gvk.Version
	if gvk.Group == "" {
		p = "/api/" + gvk.Version
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		p += "/namespaces/" + obj.GetNamespace()
	}
	return p + "/" + mapping.Resource.Resource + "/" + obj.GetName(), nil
}

// applyAll sends one server-side apply PATCH per object, `workers` at a time; the first error stops it.
func applyAll(ctx context.Context, client *rest.RESTClient, mapper meta.RESTMapper, objs []map[string]interface{},
	workers int, manager string) error {
	if len(objs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	if workers > len(objs) {
		workers = len(objs)
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(objs) || ctx.Err() != nil {
					return
				}
				obj := &unstructured.Unstructured{Object: objs[i]}
				err := applyOne(ctx, client, mapper, obj, manager)
				if err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func applyOne(ctx context.Context, client *rest.RESTClient, mapper meta.RESTMapper, obj *unstructured.Unstructured,
	manager string) error {
	p, err := path(mapper, obj)
	if err != nil {
		return err
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	result := client.Patch(types.ApplyPatchType).AbsPath(p).Param("fieldManager", manager).Param("force", "true").
		SetHeader("Accept", accept).Body(body).Do(ctx)
	if err := result.Error(); err != nil {
		return fmt.Errorf("%s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func established(obj *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		cond, ok := c.(map[string]interface{})
		if ok && cond["type"] == "Established" && cond["status"] == "True" {
			return true
		}
	}
	return false
}

// waitEstablished lists the CRDs once, then watches from that list's resourceVersion until every
// one is Established.
func waitEstablished(ctx context.Context, dyn dynamic.Interface, crds []map[string]interface{}) error {
	pending := map[string]bool{}
	for _, crd := range crds {
		pending[(&unstructured.Unstructured{Object: crd}).GetName()] = true
	}
	client := dyn.Resource(crdGVR)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		if established(&list.Items[i]) {
			delete(pending, list.Items[i].GetName())
		}
	}
	rv := list.GetResourceVersion()
	for len(pending) > 0 {
		w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			return err
		}
		for event := range w.ResultChan() {
			obj, ok := event.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if (event.Type == watch.Added || event.Type == watch.Modified) && established(obj) {
				delete(pending, obj.GetName())
			}
			if len(pending) == 0 {
				break
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("%d CRDs not Established in time: %w", len(pending), ctx.Err())
		}
	}
	return nil
}
