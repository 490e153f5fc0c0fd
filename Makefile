# Under the API: every target that needs Python depends on `setup`, so a fresh clone needs nothing else.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# PYTHON makes the virtual environment (CPython 3.11-3.14); VENV is where it lives.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
WORKSPACE ?= 0
STAGE ?=
ONLY ?=
FORCE ?= 0
QUICK ?= 0
DEVICE ?= CUDA
REMAP ?= 0
PYTEST_ARGS ?=

.PHONY: help setup demo test lint docs serve exercise check-exercises bench gpu-check compat-check clean

help: ## list the targets
	@echo "Under the API: make <target>"
	@grep -E '^[a-zA-Z0-9_-]+(-%)?:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  %-18s %s\n", $$1, $$2}'
	@echo "  test-stage-N       run stage N's tests (N = 1..12); WORKSPACE=1 tests your workspace/ copy"
	@echo "Variables: PYTHON=python3.12 (the interpreter setup uses; 3.11-3.14), VENV=.venv,"
	@echo "           STAGE=N (exercise, check-exercises, bench), ONLY=N.K[,N.M] (exercise: stub only these, one at a time),"
	@echo "           FORCE=1 (overwrite your code in a workspace copy), WORKSPACE=1,"
	@echo "           PYTEST_ARGS='-x --tb=long' (passed to pytest by test-stage-N), QUICK=1 (bench),"
	@echo "           REMAP=1 (check-exercises: trace the tests again, rewrite shared/exercise_map.json and _catches.json),"
	@echo "           DEVICE=CPU (gpu-check on the CPU client: try another JAX without a GPU)"

setup: $(STAMP) ## create .venv with PYTHON -m venv (default python3) and install .[dev] (quick when done)
	@$(PYTHON) shared/check_python.py $(PY)

$(STAMP): pyproject.toml
	@$(PYTHON) shared/check_python.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: setup ## print what each built stage does, on a real example
	$(PY) -m shared.demo

test: setup lint ## lint, then every test of every built stage and the course checks (on every core)
	$(PY) -m pytest -q -n auto --dist loadfile

test-stage-%: setup
	@n=$*; d=$$(ls -d stages/s$$(printf %02d $$n)_* 2>/dev/null | head -1); \
	if [ -z "$$d" ]; then echo "stage $$n is not built yet (no stages/s$$(printf %02d $$n)_<name>/)"; exit 1; fi; \
	name=$$(basename $$d); \
	if [ "$(WORKSPACE)" = "1" ] && [ ! -d workspace/stages/$$name ]; then \
	  echo "no workspace/stages/$$name: run 'make exercise STAGE=$$n' first"; exit 1; fi; \
	WORKSPACE=$(WORKSPACE) $(PY) -m pytest -q tests/$$name \
	  $(if $(filter 1,$(WORKSPACE)),--tb=short -rN,) $(PYTEST_ARGS)

lint: setup ## ruff, and the import-linter contract: a stage imports only earlier stages
	$(VENV)/bin/ruff check .
	@# import-linter's report in full only when a contract is broken
	@out=$$($(VENV)/bin/lint-imports --no-cache --no-logo 2>&1) \
	  && echo "import-linter: $$(echo "$$out" | tail -n 1)" || { echo "$$out"; exit 1; }

docs: setup ## build the site strictly into site/ (every example on every page runs)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

serve: setup ## serve the site at http://127.0.0.1:8000 while you edit
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

exercise: setup ## copy stage STAGE=N into workspace/ with its exercises stubbed (ONLY=N.K: just those)
	@test -n "$(STAGE)" || { echo "usage: make exercise STAGE=N [ONLY=N.K[,N.M]] [FORCE=1]"; exit 2; }
	$(PY) -m shared.exercises strip --stage $(STAGE) $(if $(ONLY),--only $(ONLY),) \
	  $(if $(filter 1,$(FORCE)),--force,)

check-exercises: setup ## prove each exercise is reached, and its stub and wrong answers fail a test (REMAP=1: rewrite its test map)
	$(PY) -m shared.exercises check $(if $(STAGE),--stage $(STAGE),) $(if $(filter 1,$(REMAP)),--remap,)

bench: setup ## one table: each row ours vs the real library, timed in the same run (QUICK=1: small sizes; STAGE=N: one stage)
	$(PY) -m shared.benchmarks $(if $(filter 1,$(QUICK)),--quick,) $(if $(STAGE),--stage $(STAGE),)

# With PYTHON given, gpu-check runs that interpreter as it is (a GPU machine's own environment);
# without, the course's .venv.
GPU_PY = $(if $(filter command line environment,$(origin PYTHON)),$(PYTHON),$(PY))

gpu-check: $(if $(filter command line environment,$(origin PYTHON)),,setup) ## on a GPU machine: PYTHON=/path/to/python make gpu-check
	$(GPU_PY) -c "import jax, jaxlib, numpy; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'numpy', numpy.__version__, 'devices', jax.devices())"
	$(GPU_PY) -m pytest -q -p no:cacheprovider tests/smoke
	$(GPU_PY) -m shared.gpu_check --device $(DEVICE)

# The stage code also supports jax/jaxlib 0.11.x, which needs Python 3.12 or newer: compat-check
# puts that JAX (no torch) in its own venv and runs the smoke tests of stages 1-9 there.
COMPAT_JAX ?= 0.11.2
COMPAT_PYTHON ?= python3.12
COMPAT_VENV = .venv-jax-$(COMPAT_JAX)

compat-check: ## the smoke tests of stages 1-9 on jax/jaxlib COMPAT_JAX (0.11.2) with COMPAT_PYTHON (python3.12)
	test -x $(COMPAT_VENV)/bin/python || $(COMPAT_PYTHON) -m venv $(COMPAT_VENV)
	$(COMPAT_VENV)/bin/python -m pip install -q 'jax==$(COMPAT_JAX)' 'jaxlib==$(COMPAT_JAX)' numpy opt_einsum pytest hypothesis
	$(COMPAT_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/smoke/test_stages_smoke.py tests/smoke/test_lowering_smoke.py -k "not lazy_tensors and not spmd"

clean: ## remove build outputs and caches (keeps .venv and your workspace/)
	rm -rf site .pytest_cache .ruff_cache .hypothesis .import_linter_cache
	find . -path ./.venv -prune -o -name __pycache__ -type d -exec rm -rf {} +
