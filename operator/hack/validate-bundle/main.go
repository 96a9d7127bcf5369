// Command validate-bundle validates an OLM bundle directory with the operator-framework
// validation library: the default bundle validators (CSV, CRDs, bundle) plus the object and
// good-practices validators. It prints one JSON report and exits 1 when there is an error.
// -suite operatorframework adds the optional validators that `operator-sdk bundle validate
// --select-optional suite=operatorframework` runs (operator-sdk v1.42.3
// internal/cmd/operator-sdk/bundle/validate/optional.go: operatorhubv2, capabilities,
// categories, alpha-deprecated-apis, good-practices), with -k8s-version as its optional value.
//
//	validate-bundle operator/bundle
//	validate-bundle -suite operatorframework -k8s-version 1.33 operator/bundle
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	validator "github.com/operator-framework/api/pkg/validation/interfaces"
)

// The optional validators of operator-sdk's suite operatorframework.
var suites = map[string]validator.Validators{
	"operatorframework": {
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.GoodPracticesValidator,
	},
}

type finding struct {
	Type   string `json:"type"`
	Level  string `json:"level"`
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

type report struct {
	Bundle   string    `json:"bundle"`
	Package  string    `json:"package"`
	Channels []string  `json:"channels"`
	CSV      string    `json:"csv"`
	CRDs     []string  `json:"crds"`
	Objects  int       `json:"objects"`
	Suite    string    `json:"suite,omitempty"`
	Errors   []finding `json:"errors"`
	Warnings []finding `json:"warnings"`
}

func convert(list []errors.Error) []finding {
	out := []finding{}
	for _, e := range list {
		out = append(out, finding{Type: string(e.Type), Level: string(e.Level), Field: e.Field, Detail: e.Error()})
	}
	return out
}

func main() {
	suite := flag.String("suite", "", "also run the optional validators of this suite (operatorframework)")
	k8sVersion := flag.String("k8s-version", "", "the Kubernetes version the optional validators check the APIs for")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: validate-bundle [-suite operatorframework] [-k8s-version 1.33] "+
			"<bundle directory with manifests/ and metadata/>")
		os.Exit(2)
	}
	optional, known := suites[*suite]
	if *suite != "" && !known {
		fmt.Fprintf(os.Stderr, "error: unknown suite %q; the one known is operatorframework\n", *suite)
		os.Exit(2)
	}
	dir := flag.Arg(0)
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: cannot read the bundle in %s: %v\n", dir, err)
		os.Exit(1)
	}
	rep := report{Bundle: dir, Package: bundle.Package, Channels: bundle.Channels, Errors: []finding{}, Warnings: []finding{}}
	if bundle.CSV != nil {
		rep.CSV = bundle.CSV.GetName()
	}
	for _, crd := range bundle.V1CRDs {
		rep.CRDs = append(rep.CRDs, crd.GetName())
	}
	objs := bundle.ObjectsToValidate()
	rep.Objects = len(bundle.Objects)
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.ObjectValidator, validation.GoodPracticesValidator)
	results := validators.Validate(objs...)
	if *suite != "" {
		rep.Suite = *suite
		// as operator-sdk passes them: every bundle object, then the optional values
		all := bundle.ObjectsToValidate()
		for _, obj := range bundle.Objects {
			all = append(all, obj)
		}
		all = append(all, map[string]string{"k8s-version": *k8sVersion})
		results = append(results, optional.Validate(all...)...)
	}
	for _, result := range results {
		rep.Errors = append(rep.Errors, convert(result.Errors)...)
		rep.Warnings = append(rep.Warnings, convert(result.Warnings)...)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if len(rep.Errors) > 0 {
		os.Exit(1)
	}
}
