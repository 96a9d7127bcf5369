// Command cainjector runs cert-manager's CA injector (the root module's pkg/controller/cainjector
// at the version go.mod pins) against one API server, as kfocp's judge of the webhook
// configurations the components role applies with cert-manager.io/inject-ca-from. Only what the
// judge needs: one controller-runtime manager, no leader election, no metrics or health servers.
//
// The steps follow what cert-manager's own binary does in cmd/cainjector/app/controller.go (Run)
// at v1.19.4, through the root module's exported API only: pkg/controller/cainjector/setup.go
// (SetupOptions, RegisterAllInjectors) and pkg/util/useragent.go (RestConfigWithUserAgent).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

func main() {
	flags := flag.NewFlagSet("cainjector", flag.ExitOnError)
	klog.InitFlags(flags) // -v, as upstream's logging flags
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the API server (required)")
	_ = flags.Parse(os.Args[1:])
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cainjector: -kubeconfig is required")
		os.Exit(2)
	}

	// Logging as cmd/cainjector/main.go sets it up: klog through pkg/logs, also controller-runtime's.
	logf.InitLogs()
	defer logf.FlushLogs()
	ctrl.SetLogger(logf.Log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log)
	if err := run(ctx, *kubeconfig); err != nil {
		logf.Log.Error(err, "cainjector failed")
		logf.FlushLogs()
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	// The user agent "cert-manager-cainjector/...": the injectors apply with the field manager
	// taken from its prefix (setup.go: util.PrefixFromUserAgent), "cert-manager-cainjector".
	config = util.RestConfigWithUserAgent(config, "cainjector")

	// The kinds the injectors read and write: Kubernetes' own, cert-manager's (the Certificate a
	// target names), CRDs and APIServices.
	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))

	// One manager on every namespace. As upstream: reads of a kind without an informer fail
	// rather than start one, and Secrets are read from the API server, not cached. No leader
	// election; metrics off ("0"); health probes off (no address).
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:  scheme,
		Cache:   cache.Options{ReaderFailOnMissingInformer: true},
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}

	// Every injectable kind on (upstream's defaults, cmd/cainjector/app/options), the CA read from
	// Certificates and Secrets (the judge's plane has cert-manager's CRDs before this starts).
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	})
	if err != nil {
		return fmt.Errorf("registering injectors: %w", err)
	}
	return mgr.Start(ctx)
}
