//go:build tools

// Package tools pins operator-sdk's ansible-operator, which runs the collection's playbooks
// from operator/watches.yaml in the compatibility tests.
package tools

import (
	_ "github.com/operator-framework/ansible-operator-plugins/cmd/ansible-operator"
)
