// Command validate-bundle validates an OLM bundle directory with the operator-framework
// validation library: the default bundle validators (CSV, CRDs, bundle) plus the object and
// good-practices validators. It prints one JSON report and exits 1 when there is an error.
//
//	validate-bundle operator/bundle
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
)

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
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: validate-bundle <bundle directory with manifests/ and metadata/>")
		os.Exit(2)
	}
	dir := os.Args[1]
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
	for _, result := range validators.Validate(objs...) {
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
