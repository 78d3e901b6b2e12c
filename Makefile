# Entry points on a fresh machine:
#   make local-run   the local remediation loop with defaults (real training, no AWS account)
#   make test        the whole test suite (what CI runs), once, with the clock a year ahead
#   make test-fast   everything but real training, CDK synth and the tests that start a torch or xgboost Python
#   make synth       the CloudFormation template into cdk.out/ (offline, no AWS account)
#   make bootstrap   once per account and region: the CDK's bootstrap stack
#   make deploy      deploy the stack with your AWS credentials, e.g. ARGS="-c notification_email=you@example.com"
#   make destroy     delete the stack (the artifacts bucket, its log bucket and the KMS key are retained)
#   make cli         the remediate command alone (.venv/bin/remediate cloud ... against a deployed stack)
#   make test-sdk    the Step Functions Data Science SDK against the state machine (its own .venv-sdk: sagemaker<3)
#   make smdebug-reference   real smdebug 1.0.34 in its own .venv-smdebug-reference, for the differential harness
# Each creates .venv and installs what it needs itself: local-run only requirements.txt, the CDK
# targets only requirements-cdk.txt and the pinned CDK CLI and Node.js (npm ci), test both.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# Keep every tool off the network except the package registries.
export CDK_DISABLE_CLI_TELEMETRY := 1
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_VALIDATION := false
# The pinned Node.js 24 (package.json; Node 20 reached end of life on 2026-04-30) runs the CDK CLI and jsii.
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
export npm_config_update_notifier := false
export npm_config_fund := false
export npm_config_audit := false

CDK := node_modules/.bin/cdk
#: Oldest Node.js major still supported (Node 22: end of life 2027-04-30).
NODE_MIN_MAJOR := 22
TORCH_VERSION := $(shell sed -n 's/^torch==//p' requirements.txt)
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu

.PHONY: local-run cli test test-fast test-sdk smdebug-reference lint bench clean synth bootstrap deploy destroy node-check

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

$(VENV)/.cdk-installed: requirements-cdk.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-cdk.txt
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt requirements-cdk.txt requirements-hf.txt $(VENV)/.runtime-installed
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

local-run: $(VENV)/.runtime-installed
	$(BIN)/remediate local run $(ARGS)

cli: $(VENV)/.runtime-installed

# The test runs keep compiled modules (__pycache__, ignored by git and by the job packer) even where the shell sets
# PYTHONDONTWRITEBYTECODE: otherwise every test process (each xdist worker, each job a test starts) compiles and
# assertion-rewrites every module again, about 4 CPU-seconds per worker on this machine.
TEST_ENV := PYTHONDONTWRITEBYTECODE=

# The whole suite, once, with the clock a year ahead: no test may hold only on the day it was written (make
# test-fast runs at today's date). One pass, not two, keeps a CI run within 20 minutes on 2 cores.
test: $(VENV)/.dev-installed node_modules/.installed node-check smdebug-reference
	$(TEST_ENV) $(BIN)/python -m pytest -n 2 --clock-shift-days 365 $(PYTEST_ARGS)

# Real training (marker "training"), CDK synth ("cdk"), the install test ("install"), the differential harness
# against real smdebug ("differential") and the tests that start a Python importing torch, xgboost, scikit-learn or a
# Jupyter kernel ("process": 11 tests, 28 of the fast suite's 121 test CPU-seconds with them) left out; make test runs
# them all.
FAST_TESTS := not training and not cdk and not install and not differential and not process
# One worker more than the machine has cores: what is left of the fast tests' waiting (real processes starting and
# stopping, a job's grace period, the local platform's polls) overlaps another worker's computing. Side by side on 2
# idle cores (`/usr/bin/time .venv/bin/python -m pytest -q -n N --dist loadgroup -m "$(FAST_TESTS)"`, two rounds):
# -n 2 62.7 and 60.0 s (85 and 80 CPU-s); -n 3 57.8 and 55.3 s (92 and 88 CPU-s). --dist loadgroup sends the tests
# marked xdist_group("xgboost") to one worker, the only one that then imports xgboost (tests/conftest.py's xgb).
FAST_WORKERS := $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test-fast: $(VENV)/.dev-installed
	$(TEST_ENV) $(BIN)/python -m pytest -q -n $(FAST_WORKERS) --dist loadgroup -m "$(FAST_TESTS)" $(PYTEST_ARGS)

# The differential harness's reference (tests/smdebug/test_differential.py): AWS's real smdebug 1.0.34 in a throwaway
# environment, every version pinned in requirements-smdebug-reference.txt, torch's CPU build as for .venv. `make test`
# builds it but goes on without it: the harness then skips, saying so with the failed command and the end of its
# output (the build log, $(SMDEBUG_REFERENCE_LOG)). Measured: 178 s with an empty pip cache, 62 s with it (1.6 GB).
SMDEBUG_REFERENCE := .venv-smdebug-reference
SMDEBUG_REFERENCE_LOG := $(SMDEBUG_REFERENCE).log
SMDEBUG_REFERENCE_PIP := $(SMDEBUG_REFERENCE)/bin/python -m pip install --quiet --disable-pip-version-check

$(SMDEBUG_REFERENCE)/.installed: requirements-smdebug-reference.txt
	@echo "building $(SMDEBUG_REFERENCE) (real smdebug 1.0.34 for the differential harness; log: $(SMDEBUG_REFERENCE_LOG))"
	@rm -rf $(SMDEBUG_REFERENCE); started=$$(date +%s); \
	( set -ex; \
	  $(PYTHON) -m venv $(SMDEBUG_REFERENCE); \
	  $(SMDEBUG_REFERENCE_PIP) --no-index --no-deps torch==$(TORCH_VERSION) \
	    || $(SMDEBUG_REFERENCE_PIP) --no-deps --index-url $(TORCH_CPU_INDEX) torch==$(TORCH_VERSION); \
	  $(SMDEBUG_REFERENCE_PIP) -r requirements-smdebug-reference.txt; \
	  $(SMDEBUG_REFERENCE)/bin/python -m pip check; \
	  $(SMDEBUG_REFERENCE)/bin/python -I -c "import smdebug, smdebug.pytorch, smdebug.xgboost, smdebug.trials, moto; \
	    assert smdebug.__version__ == '1.0.34' and not hasattr(smdebug, 'REMEDIATION_DEBUGGER'), smdebug.__file__" \
	) > $(SMDEBUG_REFERENCE_LOG) 2>&1; status=$$?; \
	if [ $$status -ne 0 ]; then \
	  echo "could not build $(SMDEBUG_REFERENCE) (exit $$status); the differential harness will skip. End of $(SMDEBUG_REFERENCE_LOG):" >&2; \
	  tail -n 15 $(SMDEBUG_REFERENCE_LOG) >&2; exit 1; \
	fi; \
	echo "built $(SMDEBUG_REFERENCE) in $$(( $$(date +%s) - started )) s" | tee -a $(SMDEBUG_REFERENCE_LOG)
	@touch $@

# Never fails: a reference that cannot be built here is reported by the harness as a skip, with the reason.
smdebug-reference:
	@$(MAKE) --no-print-directory $(SMDEBUG_REFERENCE)/.installed || true

# The Step Functions Data Science SDK (stepfunctions 2.3.0, sagemaker<3) is an optional extra with its own pins
# (requirements-sdk.txt) in its own environment, layered over .venv's packages (a .pth entry) so torch and the rest
# are not installed twice; its test is skipped in every other environment.
SDK_VENV := .venv-sdk
$(SDK_VENV)/.sdk-installed: requirements-sdk.txt $(VENV)/.dev-installed
	$(BIN)/python -m venv $(SDK_VENV)
	$(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
	  > "$$($(SDK_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/remediation-dev-venv.pth"
	$(SDK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-sdk.txt
	touch $@

test-sdk: $(SDK_VENV)/.sdk-installed
	SAGEMAKER_SUPPRESS_V2_WARNING=1 $(SDK_VENV)/bin/python -c "import stepfunctions"
	SAGEMAKER_SUPPRESS_V2_WARNING=1 $(SDK_VENV)/bin/python -m pytest -q -p no:cacheprovider -rs tests/workflow/test_stepfunctions_sdk.py $(PYTEST_ARGS)

# The CDK targets: the CLI runs cdk.json's app (.venv/bin/python app.py) on the pinned Node.js.
synth: $(VENV)/.cdk-installed node_modules/.installed node-check
	$(CDK) synth --quiet $(ARGS)
	@echo "template: cdk.out/$$(ls cdk.out | grep -m1 '\.template\.json$$')"

bootstrap: $(VENV)/.cdk-installed node_modules/.installed node-check
	$(CDK) bootstrap $(ARGS)

deploy: $(VENV)/.cdk-installed node_modules/.installed node-check
	$(CDK) deploy $(ARGS)

destroy: $(VENV)/.cdk-installed node_modules/.installed node-check
	$(CDK) destroy $(ARGS)

node-check: node_modules/.installed
	@major=$$(node -p 'process.versions.node.split(".")[0]'); \
	if [ "$$major" -lt $(NODE_MIN_MAJOR) ]; then \
		echo "Node.js $$(node --version) is past its end of life; npm ci installs the pinned Node.js 24 on Linux" \
			"x64/arm64 (package.json), elsewhere install Node.js 22 or 24 and run make again" >&2; \
		exit 1; \
	fi

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

bench: $(VENV)/.runtime-installed
	$(BIN)/python bench/hook_overhead.py
	$(BIN)/python bench/remediation_policies.py

clean:
	rm -rf $(VENV) $(SDK_VENV) $(SMDEBUG_REFERENCE) $(SMDEBUG_REFERENCE_LOG) node_modules cdk.out .pytest_cache build *.egg-info
