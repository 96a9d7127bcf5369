// Command controller runs cert-manager's controllers (the root module's pkg/controller registry at
// the version go.mod pins) against one API server, as kfocp's judge of the Certificates and
// Issuers the components role applies. Only what the judge needs: the controllers named by
// -controllers, no leader election, no metrics, health or profiling servers, no ACME.
//
// The steps follow what cert-manager's own binary does in cmd/controller/app/controller.go (Run,
// buildControllerContextFactory) at v1.19.4, through the root module's exported API only:
// pkg/controller/context.go (NewContextFactory, ContextFactory.Build) and
// pkg/controller/register.go (Known).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"

	// Each package registers its controllers with pkg/controller in its init (Register): the
	// Issuer's readiness, CertificateRequest approval and signing by SelfSigned and CA issuers,
	// and the Certificate's life cycle. The issuer packages register the Issuer kinds the
	// issuers controller sets up (pkg/issuer/factory.go RegisterIssuer).
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	flags := flag.NewFlagSet("controller", flag.ExitOnError)
	klog.InitFlags(flags) // -v, as upstream's logging flags
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the API server (required)")
	clusterResourceNamespace := flags.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets of ClusterIssuers")
	enabled := flags.String("controllers", "", "comma-separated names of the controllers to run (required)")
	_ = flags.Parse(os.Args[1:])
	if *kubeconfig == "" || *enabled == "" {
		fmt.Fprintln(os.Stderr, "controller: -kubeconfig and -controllers are required")
		os.Exit(2)
	}

	// Logging as cmd/controller/main.go sets it up: klog through pkg/logs, the logger in the context.
	logf.InitLogs()
	defer logf.FlushLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log)
	if err := run(ctx, *kubeconfig, *clusterResourceNamespace, strings.Split(*enabled, ",")); err != nil {
		logf.Log.Error(err, "controller failed")
		logf.FlushLogs()
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterResourceNamespace string, enabled []string) error {
	log := logf.FromContext(ctx)
	log.Info("starting cert-manager controller", "version", util.VersionInfo().GitVersion)

	// The context factory: clients on the kubeconfig with upstream's default QPS and burst
	// (internal/apis/config/controller/v1alpha1/defaults.go: 20 and 50), every namespace, the
	// cluster resource namespace, and the Certificate options at their defaults (no owner
	// reference on Secrets; annotations copied to requests but kubectl's, flux's and argocd's).
	// ACME, ingress-shim and Gateway options stay empty: none of those controllers run.
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions: controller.IssuerOptions{
			ClusterResourceNamespace:        clusterResourceNamespace,
			ClusterIssuerAmbientCredentials: true,
		},
		CertificateOptions: controller.CertificateOptions{
			CopiedAnnotationPrefixes: []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
		},
	})
	if err != nil {
		return err
	}
	// The base context, whose informer factories every controller's context shares.
	base, err := factory.Build()
	if err != nil {
		return err
	}

	// Construct each enabled controller from the registry (its constructor builds its own
	// context, user agent and field manager named after it, and registers its informers).
	known := controller.Known()
	names := append([]string(nil), enabled...)
	sort.Strings(names)
	running := make([]controller.Interface, 0, len(names))
	for _, name := range names {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("unknown controller %q (not registered by the packages this binary imports)", name)
		}
		iface, err := construct(factory)
		if err != nil {
			return fmt.Errorf("constructing controller %s: %w", name, err)
		}
		log.Info("starting controller", "controller", name)
		running = append(running, iface)
	}

	// Run them (upstream's default of 5 workers each) in one group: the first to fail stops the
	// others, as upstream's errgroup does. Then start the informers they asked for.
	group, groupCtx := errgroup.WithContext(ctx)
	for _, iface := range running {
		group.Go(func() error { return iface.Run(5, groupCtx) })
	}
	base.SharedInformerFactory.Start(groupCtx.Done())
	base.KubeSharedInformerFactory.Start(groupCtx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(groupCtx.Done())

	err = group.Wait()
	log.Info("control loops exited")
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	return err
}
