"""Shared inputs for the workflow domain tests: the reference execution input and a way to
record what a monitor would record after a job (outcome, issue, evidence)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.state.payload import WorkflowState

ACCOUNT_INPUT = {
    "bucket": "remediation-artifacts-123456789012",
    "region": "us-east-1",
    "sm_role": "arn:aws:iam::123456789012:role/SageMakerExecutionRole",
}

#: What the in-job debugger measured on the reference scenario (docs/decisions/001-reference-scenario-batch-norm-first.md): no batch norm,
#: warmup 0.1, non-finite gradient norm at step 2-3, initial gradient norm 200-950, initial loss 15-60.
REFERENCE_EVIDENCE = {
    "initial_loss": 31.7,
    "initial_gradient_norm": 512.3,
    "first_issue_step": 2,
    "phase": "warmup",
    "steps_per_epoch": 20,
    "last_step": 2,
    "last_finite_loss": 2.9e6,
    "max_gradient_norm": 8.4e7,
    "learning_rate_at_issue": 0.1,
}

RecordIssue = Callable[..., WorkflowState]


@pytest.fixture
def account_input() -> dict[str, Any]:
    return dict(ACCOUNT_INPUT)


@pytest.fixture
def reference_state() -> WorkflowState:
    return initial_state(ACCOUNT_INPUT)


def launch_and_record(
    state: WorkflowState,
    *,
    outcome: str = "issues_found",
    rule: str = "ExplodingTensor",
    step: int | None = 2,
    phase: str | None = "warmup",
    evidence: dict[str, Any] | None = None,
    kind: str | None = None,
    **attempt_fields: Any,
) -> WorkflowState:
    """Launch the next job for ``state`` and record how it ended, as the train and monitor handlers do."""
    launched = state.with_new_attempt(f"remediation-resnet-{state.attempt_count + 1}")
    fields: dict[str, Any] = {"outcome": outcome, **attempt_fields}
    if outcome == "issues_found":
        fields["issue"] = {"rule": rule, "step": step, "tensor": "gradient_norm", "value": float("nan"), "phase": phase}
        if kind is not None:
            fields["issue"]["kind"] = kind
        fields["rule_statuses"] = [{"name": rule, "status": "IssuesFound", "step": step}]
        fields["evidence"] = REFERENCE_EVIDENCE if evidence is None else evidence
    return launched.with_last_attempt(**fields)


@pytest.fixture
def record() -> RecordIssue:
    return launch_and_record


@pytest.fixture
def reference_evidence() -> dict[str, Any]:
    return dict(REFERENCE_EVIDENCE)
