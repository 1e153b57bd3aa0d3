# Two entry points do all set-up on a fresh machine:
#   make demo   — the main job on the embedded default (simulated pool)
#   make test   — the whole test suite
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_PACKAGES := openssh-server openssh-client rsync chromium

.PHONY: demo test lint pytest system-deps env clean bench

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
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

env: $(STAMP)

lint: env
	$(BIN)/ruff check ranktable tests bench
	$(BIN)/ruff format --check ranktable tests bench
	$(BIN)/mypy

pytest: env system-deps
	$(BIN)/pytest -q

test: system-deps env lint pytest

demo: env
	$(BIN)/ranktable demo

bench: env system-deps
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist .mypy_cache .ruff_cache .pytest_cache
