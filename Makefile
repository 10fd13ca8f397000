# rankbench: `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Data root: RANKBENCH_DATA if set, else ../shared/data when it exists (the team's machines).
RANKBENCH_DATA ?= $(shell [ -d ../shared/data ] && cd ../shared/data && pwd)
export RANKBENCH_DATA
# Peer sources (make peers): PEERS_SRC if set, else ../shared/peers when it exists.
PEERS_SRC ?= $(shell [ -d ../shared/peers ] && cd ../shared/peers && pwd)
export PEERS_SRC
PYTEST_ARGS ?=
# make test's pytest workers (pytest-xdist, whole files each): one per core, at most 4
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? n : 4 )))
# Hydra launcher for make reproduce: basic (one job after another), joblib, ray_cluster, slurm ...
LAUNCHER ?=
# RERUN=1: train every run again (records replaced) instead of resuming from the store
RERUN ?=
REPRODUCE_ARGS := $(if $(LAUNCHER),--launcher $(LAUNCHER)) $(if $(RERUN),--rerun)

.DEFAULT_GOAL := help

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m rankbench.warmup  # numba's cache filled once (one process per core), so no first run compiles
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install rankbench with its dev extra

test: $(STAMP) ## Install, then run the test suite on TEST_WORKERS cores (exit 5 "no tests" counts as failure)
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

test-matrix: $(STAMP) ## The full solver-accuracy matrix (every LETOR Fold1 x C up to 2^20 x pairing; about 8 min)
	$(PY) -m pytest -m matrix tests/test_solver_accuracy.py $(PYTEST_ARGS)

test-cluster: $(STAMP) ## Query shards on a 3-node local Ray cluster: equality, faults, Hydra, launchers, a 3.7M-document set (about 4 min; needs ray and 6 GB under /tmp)
	$(PY) -m pytest -m cluster tests/test_cluster.py tests/test_boosting_data_parallel.py $(PYTEST_ARGS)

test-long: $(STAMP) ## The end-to-end runs of a minute or more left out of make test (marker long; about 11 min)
	$(PY) -m pytest -m long $(PYTEST_ARGS)

lint: $(STAMP) ## ruff over src and tests
	$(VENV)/bin/ruff check src tests

bench: $(STAMP) ## Benchmarks: solver timings per fold and scaling curves (writes results/bench/)
	$(PY) -m rankbench.bench --out results/bench

reproduce: $(STAMP) ## Run every paper experiment config (resuming stored runs), then regenerate results/ (LAUNCHER=joblib|ray_cluster|slurm, RERUN=1)
	$(PY) -m rankbench.reproduce $(REPRODUCE_ARGS)

reproduce-quick: $(STAMP) ## Reduced reproduce on small data (minutes), into results/_quick
	$(PY) -m rankbench.reproduce --quick $(REPRODUCE_ARGS)

peers: $(STAMP) ## Build the papers' peer programs (SVM-light, LIBLINEAR ranksvm, sofia-ml) into ~/.cache/rankbench/peers (RANKBENCH_PEERS); docs/peers.md
	$(PY) -m rankbench.peers build

reproduce-peers: $(STAMP) peers ## make reproduce plus the tier-peers experiments (SVM-light -# 5000 on OHSUMED's five folds at Tables 3-4's C: 4-41 min per run, 2 h 8 min from an empty store here)
	$(PY) -m rankbench.reproduce --peers $(REPRODUCE_ARGS)

report: $(STAMP) ## Re-render tables and figures from stored records only (no training)
	$(PY) -m rankbench.reproduce --report-only

clean: ## Remove build artefacts (keeps .venv and results)
	rm -rf build dist src/*.egg-info .pytest_cache .ruff_cache

.PHONY: help install test test-matrix test-cluster test-long lint bench peers reproduce reproduce-peers reproduce-quick report clean
