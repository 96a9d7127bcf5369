# kfocp: `make demo` sets up and runs the demo on a local control plane; `make test` runs the tests.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
COLLECTION_LINK := .cache/collections/ansible_collections/kfocp/kubeflow
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export KFOCP_CLUSTER_DIR ?= $(CURDIR)/.cluster
PYTEST_ARGS ?=
# make test runs the test files on this many workers (pytest-xdist), each with its own control plane.
# Three on 2 cores: a worker's tests spend part of their time waiting on its control plane, which a
# third worker fills (the main suite on a 2-core machine: 2233 s on two workers, 2117 s on three
# with the slowest files first).
TEST_WORKERS ?= 3
# The tests, the benchmark and the soak run with no route off this machine: in a network namespace
# of their own whose only interface is loopback (hack/netns.py; as root, or in a user namespace).
# A dial off the machine fails at once, and the tests name it. Builds, which need the package
# registries, run outside it. NETNS=0 runs everything in the machine's own network namespace (also
# needed with KFOCP_TEST_CLUSTER_DIR, whose control plane listens on the machine's loopback).
NETNS ?= 1
OFFLINE := $(if $(filter 1,$(NETNS)),$(BIN)/python hack/netns.py --,)

.PHONY: help venv venv-runtime build build-plane istioctl up down demo test unit integration lint sanity bench soak clean operator-crd demo-operator \
	operator-stack test-operator-stack

help:
	@echo "make demo   - set up, start the local control plane, run playbooks/site.yml, show the result"
	@echo "make test   - lint, sanity, unit and integration tests (starts its own control plane), then the"
	@echo "              unit tests and a converge on the ansible-operator image's stack (make test-operator-stack)"
	@echo "make up / make down - start / stop the local control plane (.cluster/)"
	@echo "make bench  - benchmarks against the alternatives (QUICK=1 for a CI-sized run)"

# What the playbooks, the operator and the control plane need (make up, make demo) ...
# pip installs with --no-compile: Python compiles a module's bytecode when it first imports it,
# and of the bundle's tens of thousands of files kfocp imports few.
$(BIN)/.runtime: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --no-compile --upgrade pip
	$(BIN)/pip install -q --no-compile -r requirements.txt
	touch $@

# ... and what the tests, the linters and the benchmarks add (make test, make bench).
$(BIN)/.installed: $(BIN)/.runtime requirements-dev.txt requirements-aws.txt
	$(BIN)/pip install -q --no-compile -r requirements-dev.txt
	$(BIN)/pip install -q --no-compile --no-deps -r requirements-aws.txt
	touch $@

$(COLLECTION_LINK):
	mkdir -p $(dir $(COLLECTION_LINK))
	ln -sfn ../../../.. $(COLLECTION_LINK)

venv-runtime: $(BIN)/.runtime $(COLLECTION_LINK)

venv: $(BIN)/.installed $(COLLECTION_LINK)

# The second stack: the Python stack of the ansible-operator image (Python 3.12, ansible-core 2.18,
# kubernetes 33.1; operator/hack/ansible-operator/requirements.txt) with the collections kfocp's
# image adds (awx/ee-collections.yml), from PyPI. OPERATOR_PYTHON names a Python 3.12 to use.
OPERATOR_VENV := .venv-operator
# What make test runs on it: the unit tests, and one converge of a role's playbook on a control plane;
# not the check of the `ansible` bundle the execution environment installs, which this stack has not,
# nor the files that hold kfocp to upstream's sources, trees and renders (the register, the releases,
# the judges): their oracle and kfocp's answer are the same on either stack, and run on the first.
OPERATOR_STACK_TESTS ?= tests/unit tests/integration/test_scc_role.py::test_grant_idempotence_check_mode_revoke_and_absent \
	--deselect tests/unit/test_execution_environment.py::test_the_execution_environment_pins_the_bundles_collection_versions \
	--ignore-glob='tests/unit/test_upstream_*.py' --ignore-glob='tests/unit/test_*_upstream.py' \
	--ignore=tests/unit/test_contracts_register.py --ignore=tests/unit/test_references.py \
	--ignore=tests/unit/test_releases.py --ignore=tests/unit/test_scc_renders.py --ignore=tests/unit/test_scc_versions.py \
	--ignore=tests/unit/test_istio_authz_judge.py --ignore=tests/unit/test_example_tree.py

$(OPERATOR_VENV)/.installed: operator/hack/ansible-operator/requirements.txt awx/ee-collections.yml requirements.txt \
		hack/operator_stack.py | $(BIN)/.installed
	$(BIN)/python hack/operator_stack.py build --venv $(OPERATOR_VENV)

operator-stack: venv $(OPERATOR_VENV)/.installed

# Every binary the tests run is built here, before them, and the upstream modules the tests read
# as oracles (tests/upstream) are downloaded at the versions go.mod pins: a test downloads nothing.
# The builders run BUILD_JOBS at a time: each `go build` keeps both cores busy while it compiles,
# and the others fill the time it spends downloading modules and linking.
BUILD_JOBS ?= 3
BUILDERS := build-cluster build-istio build-argocd build-operator build-gpu-operator build-cert-manager \
	build-knative-operator build-kserve build-upstream-modules build-redis
.PHONY: $(BUILDERS)
build: venv-runtime
	@$(MAKE) --no-print-directory -j $(BUILD_JOBS) $(BUILDERS)

build-cluster:
	$(BIN)/python hack/cluster.py build --workloads --judges
build-istio:
	$(BIN)/python hack/cluster.py build --istioctl
build-argocd:
	$(BIN)/python hack/argocd.py build
build-operator:
	$(BIN)/python operator/hack/build.py
build-gpu-operator:
	$(BIN)/python hack/gpu_operator.py build
build-cert-manager:
	$(BIN)/python hack/cert_manager.py build
build-knative-operator:
	$(BIN)/python hack/knative_operator.py build
build-kserve:
	$(BIN)/python hack/kserve.py build
	$(BIN)/python hack/knative_serving.py build
build-upstream-modules:
	for dir in tests/upstream tests/upstream/kube130; do \
		(cd $$dir && go mod download $$(awk '/^\t[a-z]/ {print $$1 "@" $$2}' go.mod)) || exit 1; done
build-redis:
	@command -v redis-server >/dev/null || (apt-get update -qq && apt-get install -y -qq redis-server >/dev/null) \
		|| { echo "Argo CD's tests need Redis: install Debian's redis-server"; exit 1; }

# What the local control plane alone needs (make up, make demo): its binaries and the workloads'
# (kube-scheduler, kwok); `up` copies OpenShift's CRDs from their modules. Argo CD, the judges,
# ansible-operator and istioctl are for make test.
build-plane: venv-runtime
	$(BIN)/python hack/cluster.py build --workloads

# istioctl, for the tests that run its analyzers, and the istio-authz judge from the same module
# (hack/istio), for the tests that hold authz.py to Istio's translation (long builds the first time; cached)
istioctl: venv
	$(BIN)/python hack/cluster.py build --istioctl

up: build-plane
	$(BIN)/python hack/cluster.py up --workloads

down:
	@if [ -x $(BIN)/python ]; then $(BIN)/python hack/cluster.py down; fi

demo: up
	cd hack && KFOCP_NETNS=$(NETNS) ../$(BIN)/python demo.py

# The test tools' venv and the second stack's install beside the builds (pip waits on the registry
# while the builds keep the cores busy), then lint and sanity side by side (each mostly on one core).
test: venv-runtime
	@$(MAKE) --no-print-directory -j $(BUILD_JOBS) -Otarget venv operator-stack $(BUILDERS)
	@$(MAKE) --no-print-directory -j 2 -Otarget lint sanity
	$(OFFLINE) $(BIN)/python -m pytest -p no:cacheprovider --timeout=1800 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 \
		tests/unit tests/integration tests/reliability $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-operator-stack

# The tests of the second stack alone (make test runs them after the others).
test-operator-stack: operator-stack build
	$(OFFLINE) $(OPERATOR_VENV)/bin/python -m pytest -p no:cacheprovider --timeout=900 -n $(TEST_WORKERS) --dist loadfile \
		--no-loadscope-reorder --durations=10 $(OPERATOR_STACK_TESTS) $(PYTEST_ARGS)

unit: venv
	$(OFFLINE) $(BIN)/python -m pytest -q tests/unit $(PYTEST_ARGS)

integration: venv build istioctl
	$(OFFLINE) $(BIN)/python -m pytest tests/integration $(PYTEST_ARGS)

lint: venv
	$(BIN)/ansible-lint --profile production --offline roles playbooks

sanity: venv
	PATH=$(CURDIR)/$(BIN):$$PATH bash hack/sanity.sh

# The benchmark (README, "Benchmarks"): about 20 minutes on 2 cores; QUICK=1 for a CI-sized subset.
# BENCH_ARGS passes options to benchmarks/run.py (--sizes, --methods, --no-operator, ...).
# The Go limit client (benchmarks/limit) is built first, with the module proxy, into ~/.cache/kfocp.
bench: venv build
	$(BIN)/python benchmarks/limit.py --build
	$(OFFLINE) $(BIN)/python benchmarks/run.py $(if $(QUICK),--quick,) $(BENCH_ARGS)

# The reliability suite at full size (make test runs it with a reduced N), then the operator through
# 10 minutes of churn (new Users and namespaces, deleted LimitRanges and RoleBindings) around two
# kube-apiserver restarts and one of etcd, ending with an object-by-object comparison with a clean
# reconcile (latencies and RSS printed, and in tests/output/operator_outages.json); then Argo CD and
# the operator side by side through 5 minutes of churn (tests/integration/test_fleet.py).
soak: venv build
	KFOCP_FAULT_PROFILES=500 KFOCP_LOAD_PROFILES=2000 KFOCP_LOAD_USERS=200 KFOCP_RBAC_SWEEP=all \
		KFOCP_FUZZ_EXAMPLES=60 KFOCP_FUZZ_ROLE_CASES=40 KFOCP_PARITY_EXAMPLES=30 \
		$(OFFLINE) $(BIN)/python -m pytest -s tests/reliability $(PYTEST_ARGS)
	KFOCP_OUTAGE_CHURN_SECONDS=600 $(OFFLINE) $(BIN)/python -m pytest -s tests/integration/test_operator_outages.py \
		$(PYTEST_ARGS)
	KFOCP_FLEET_CHURN_SECONDS=300 $(OFFLINE) $(BIN)/python -m pytest -s tests/integration/test_fleet.py $(PYTEST_ARGS)

# The Kubeflow CRD is generated from the roles' argument specs: run this after changing a role's variables.
operator-crd: venv
	$(BIN)/python operator/hack/gen_crd.py

# The local control plane, the CRD, the operator (log in .cluster/operator.log) and a sample Kubeflow CR.
demo-operator: build up
	$(BIN)/python operator/hack/demo.py

clean: down
	rm -rf .cache .cluster tests/output $(OPERATOR_VENV)
