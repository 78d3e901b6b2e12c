"""Builds the CDK app: the stack from context values, cdk-nag's AwsSolutions pack on every synth."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Environment, Validations
from cdk_nag import AwsSolutionsChecks

from contracts.stack_guardrails import CONTEXT_KEYS, CostGuardrails
from infra.budget import check_budget_limit
from infra.bundling import REPO_ROOT
from infra.functions import DEFAULT_POWERTOOLS_VERSION
from infra.outputs import DEFAULT_STACK_NAME
from infra.powertools_layer import AUTO
from infra.stack import DEFAULT_JOB_NAME_PREFIX, TrainingRemediationStack
from infra.storage import DEFAULT_DEBUG_OUTPUT_EXPIRATION_DAYS
from infra.workflow import DEFAULT_DEFINITION_PATH

CDK_JSON = REPO_ROOT / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (feature flags and defaults), so a synth through the Python API matches `cdk synth`."""
    return dict(json.loads(CDK_JSON.read_text(encoding="utf-8")).get("context", {}))


def build_app(
    context: Mapping[str, Any] | None = None, outdir: str | None = None
) -> tuple[App, TrainingRemediationStack]:
    """Context values: stack_name, job_name_prefix, notification_email, state_machine_definition,
    powertools_version, powertools_layer (auto, public or bundled), debug_output_expiration_days, account, region,
    the cost guardrails allowed_instance_types, max_instance_count, max_instance_hours, max_concurrent_executions
    (contracts.stack_guardrails), budget_limit_usd (a monthly AWS Budgets alarm on the account's SageMaker spend;
    unset: none) and legacy_sagemaker_debugger (false: SageMaker Debugger's legacy grants are not deployed)."""
    merged = {**cdk_json_context(), **dict(context or {})}
    app = App(context=merged, outdir=outdir, analytics_reporting=False)

    def value(name: str, default: Any = None) -> Any:
        found = app.node.try_get_context(name)
        return default if found in (None, "") else found

    account, region = value("account"), value("region")
    env = Environment(account=str(account), region=str(region)) if account and region else None
    expiration = value("debug_output_expiration_days", DEFAULT_DEBUG_OUTPUT_EXPIRATION_DAYS)
    try:
        expiration_days = int(expiration)
    except (TypeError, ValueError):
        raise ValueError(f"debug_output_expiration_days: must be a whole number of days (got {expiration!r})") from None
    cost_guardrails = CostGuardrails.from_values(
        {key: value(key) for key in CONTEXT_KEYS}
    )
    legacy = value("legacy_sagemaker_debugger", False)
    if str(legacy).lower() not in ("true", "false"):
        raise ValueError(f"legacy_sagemaker_debugger: must be true or false (got {legacy!r})")
    stack = TrainingRemediationStack(
        app,
        value("stack_name", DEFAULT_STACK_NAME),
        job_name_prefix=str(value("job_name_prefix", DEFAULT_JOB_NAME_PREFIX)),
        notification_email=value("notification_email"),
        definition_path=Path(value("state_machine_definition", str(DEFAULT_DEFINITION_PATH))),
        powertools_version=str(value("powertools_version", DEFAULT_POWERTOOLS_VERSION)),
        powertools_layer=str(value("powertools_layer", AUTO)),
        debug_output_expiration_days=expiration_days,
        cost_guardrails=cost_guardrails,
        legacy_sagemaker_debugger=str(legacy).lower() == "true",
        budget_limit_usd=check_budget_limit(value("budget_limit_usd")),
        env=env,
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack
