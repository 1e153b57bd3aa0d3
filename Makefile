# Two entry points do all set-up on a fresh machine:
#   make demo   — the main job on the embedded default (simulated pool); PORT=a free one by default (printed)
#   make test   — the whole test suite (leaves the git tree clean)
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_PACKAGES := openssh-server openssh-client rsync chromium bubblewrap

.PHONY: demo test tree-snapshot lint pytest test-faults test-core wheel-check system-deps env clean bench labextension jest ui-test screenshots \
	controlplane conformance

# System packages the tests need (real sshd, rsync for the sync benchmark, Chromium for browser tests).
system-deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "Install these Debian packages first: sudo apt-get install$$missing" >&2; exit 1; fi; \
	fi

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# the labextension is built below (jlpm, from the venv's jupyterlab), not inside pip's build hook
	SKIP_JUPYTER_BUILDER=1 $(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# JupyterLab extension: Node deps via the venv's jlpm (yarn, node-modules linker), TypeScript -> labextension,
# linked into the venv so `jupyter labextension list` shows it. Browsers are never downloaded.
JLPM := PATH="$(CURDIR)/$(BIN):$$PATH" PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(CURDIR)/$(BIN)/jlpm
NODE_STAMP := node_modules/.ranktable-installed
UI_STAMP := ui-tests/node_modules/.ranktable-installed
LABEXT := ranktable/labextension/package.json
TS_SOURCES := $(shell find src style schema -type f 2>/dev/null) package.json tsconfig.json ranktable/server_ext/openapi.yaml

$(NODE_STAMP): package.json yarn.lock | $(STAMP)
	$(JLPM) install
	touch $@

$(LABEXT): $(NODE_STAMP) $(TS_SOURCES)
	$(JLPM) build
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/jupyter labextension develop --overwrite .
	touch $@

labextension: $(LABEXT)

$(UI_STAMP): ui-tests/package.json ui-tests/yarn.lock | $(STAMP)
	cd ui-tests && $(JLPM) install
	touch $@

env: $(STAMP) $(LABEXT)

lint: env
	$(BIN)/ruff check ranktable tests bench
	$(BIN)/ruff format --check ranktable tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(JLPM) lint:check

jest: env
	$(JLPM) test

# Browser tests: Galata/Playwright in Debian's chromium against the simulated pool + Notebook instance.
ui-test: env system-deps $(UI_STAMP)
	cd ui-tests && CI=1 $(JLPM) playwright test

# The README's pictures (docs/img/*.png): the browser tests again, this time photographing each section.
screenshots: env system-deps $(UI_STAMP)
	cd ui-tests && CI=1 RANKTABLE_SCREENSHOTS=1 $(JLPM) playwright test

# Integration tests: real sshd, real kubectl, the simulated pool, a Jupyter server (pytest-jupyter).
pytest: env system-deps
	$(BIN)/pytest -q tests/integration

# The fault suite alone (`make test` runs it with the rest of tests/integration and ui-tests): kill -9 and
# restarts of the pool, sshd and the Jupyter server, SSH cut in a cell, a sync and a forward (marker `fault`),
# and the Jupyter server killed and restarted as the panel sees it (ui-tests/tests/outage.spec.ts).
test-faults: env system-deps $(UI_STAMP)
	$(BIN)/pytest -q -m fault tests/integration
	cd ui-tests && CI=1 $(JLPM) playwright test tests/outage.spec.ts

# Core tests in a venv holding only the core dependencies (tests/core/requirements.txt) and this checkout
# (editable, --no-deps): a test that needs more fails there.
CORE_VENV := .venv-core
CORE_STAMP := $(CORE_VENV)/.installed
$(CORE_STAMP): tests/core/requirements.txt pyproject.toml
	test -x $(CORE_VENV)/bin/python || $(PY) -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/pip install -q -r tests/core/requirements.txt
	SKIP_JUPYTER_BUILDER=1 $(CORE_VENV)/bin/pip install -q --no-deps --no-build-isolation -e .
	touch $@

test-core: $(CORE_STAMP)
	$(CORE_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/core

# The wheel as users get it: built, installed with its dependencies in a fresh venv, CLI + extensions checked.
wheel-check: env
	.ci/wheel-check $(CURDIR)/$(BIN)/python

# `make test` must leave the git tree as it found it (e.g. no rewritten pictures): compared at the end.
TREE_BEFORE := build/tree-before.txt
tree-snapshot:
	@mkdir -p build && (git status --porcelain 2>/dev/null || true) > $(TREE_BEFORE)

test: tree-snapshot system-deps env lint test-core pytest wheel-check jest ui-test
	@(git status --porcelain 2>/dev/null || true) | diff $(TREE_BEFORE) - \
	  || { echo "make test changed the git tree (see above)" >&2; exit 1; }

# JupyterLab with the Ranktable panel on the simulated Lite pool and the simulated Notebook instance, its
# workspace ready for docs/first-hour.md (Ctrl-C stops all of it). The installs' output goes to
# $(DEMO_LOG); the terminal shows only what the demo runs and where.
PORT ?= 0
DEMO_LOG := build/demo-install.log
demo:
	@mkdir -p build
	@echo "installing system packages, Python and Node dependencies (log: $(DEMO_LOG)) ..."
	@$(MAKE) --no-print-directory system-deps env > $(DEMO_LOG) 2>&1 \
	  || { tail -n 30 $(DEMO_LOG); echo "make demo: the install failed; the whole log is $(DEMO_LOG)" >&2; exit 1; }
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m ranktable.server_ext.demo --no-browser --port $(PORT)

# The real control plane (kube-apiserver, kube-controller-manager, etcd, Volcano) built from the Go modules
# pinned in controlplane/, into a per-machine cache keyed by their hash (docs/control-plane.md).
controlplane:
	nice -n 10 controlplane/build.sh

# One scenario suite on the Python pool and on the real control plane (docs/conformance.md).
conformance: env controlplane
	RANKTABLE_CONFORMANCE=1 $(BIN)/pytest -q tests/conformance

bench: env system-deps
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(CORE_VENV) build dist .mypy_cache .ruff_cache .pytest_cache
