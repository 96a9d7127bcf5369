// Command argocd is the Argo CD binary kfocp's tests and benchmark run: the four components they
// start, each picked by the name the binary runs under, as upstream's cmd/main.go picks it (the
// image links every component to one binary). Built against github.com/argoproj/argo-cd/v3 by
// hack/argocd.py; leaving out the CLI, the API server, Dex and the other servers makes the build
// compile about a sixth fewer packages.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	applicationset "github.com/argoproj/argo-cd/v3/cmd/argocd-applicationset-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/log"
)

var components = map[string]func() *cobra.Command{
	common.CommandApplicationController:    appcontroller.NewCommand,
	common.CommandApplicationSetController: applicationset.NewCommand,
	common.CommandRepoServer:               reposerver.NewCommand,
	common.CommandGitAskPass:               gitaskpass.NewCommand,
}

func init() {
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	// Upstream's main calls util/grpc.DisableSRVLookups, which panics unless a linked package
	// (google.golang.org/grpc/balancer/grpclb, which none of these components imports) turned
	// the DNS resolver's SRV lookups on: here they are off already.
	name := filepath.Base(os.Args[0])
	if value := os.Getenv("ARGOCD_BINARY_NAME"); value != "" {
		name = value
	}
	newCommand, ok := components[name]
	if !ok {
		known := make([]string, 0, len(components))
		for component := range components {
			known = append(known, component)
		}
		sort.Strings(known)
		fmt.Fprintf(os.Stderr, "%s: this build runs only %v (link it under one of those names)\n", name, known)
		os.Exit(2)
	}
	if err := newCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
