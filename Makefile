# Two entry points on a fresh machine:
#   make local-run   the local remediation loop with defaults (real training, no AWS account)
#   make test        the whole test suite (what CI runs)
#   make test-fast   everything but real training and CDK synth (under a minute)
# Each creates .venv and installs the pinned requirements itself.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# Keep every tool off the network except the package registries.
export CDK_DISABLE_CLI_TELEMETRY := 1
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_VALIDATION := false
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
export npm_config_update_notifier := false
export npm_config_fund := false
export npm_config_audit := false

TORCH_VERSION := $(shell sed -n 's/^torch==//p' requirements.txt)
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu

.PHONY: local-run test test-fast lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# PyTorch's CPU build unless this machine has an NVIDIA GPU, so a machine without one never downloads the CUDA
# stack: a CPU wheel pip already finds without an index (a local wheel directory) first, else PyTorch's CPU
# index. requirements.txt's torch==X then accepts the installed X+cpu.
$(VENV)/.torch-installed: requirements.txt | $(BIN)/python
	if command -v nvidia-smi >/dev/null 2>&1; then \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check torch==$(TORCH_VERSION); \
	elif $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-index --no-deps torch==$(TORCH_VERSION) 2>/dev/null; then :; \
	else \
	  $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --index-url $(TORCH_CPU_INDEX) torch==$(TORCH_VERSION); \
	fi
	touch $@

$(VENV)/.runtime-installed: requirements.txt pyproject.toml setup.py $(VENV)/.torch-installed | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt $(VENV)/.runtime-installed
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

local-run: $(VENV)/.runtime-installed
	$(BIN)/remediate local run $(ARGS)

test: $(VENV)/.dev-installed node_modules/.installed
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Real training (marker "training"), CDK synth ("cdk") and the install test ("install") left out.
test-fast: $(VENV)/.dev-installed
	$(BIN)/python -m pytest -q -n auto -m "not training and not cdk and not install" $(PYTEST_ARGS)

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

bench: $(VENV)/.runtime-installed
	$(BIN)/python bench/hook_overhead.py
	$(BIN)/python bench/remediation_policies.py

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache build *.egg-info
