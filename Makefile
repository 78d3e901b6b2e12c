# Two entry points on a fresh machine:
#   make local-run   the local remediation loop with defaults (real training, no AWS account)
#   make test        the whole test suite (what CI runs)
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

.PHONY: local-run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.runtime-installed: requirements.txt pyproject.toml | $(BIN)/python
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

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

bench: $(VENV)/.runtime-installed
	$(BIN)/python bench/hook_overhead.py
	$(BIN)/python bench/remediation_policies.py

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache
