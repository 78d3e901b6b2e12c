"""Recorded runs (``recorded/make_recorded_runs.py``: real training, the real debugger) fed through the monitor's own
``decide`` / ``apply_decision`` as the monitor Lambda reads them: the tests of the planner on real trajectories
start from these."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contracts.rule_status import RuleStatusDocument
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.monitoring.rule_reading import RuleReading, metrics_saved_by_script
from lambdas.remediation.monitoring.verdict import apply_decision, decide
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.state.payload import WorkflowState

RECORDED = Path(__file__).resolve().parent / "recorded"
SOURCE = "s3://remediation-artifacts-123456789012/code/recorded-0123456789abcdef/sourcedir.tar.gz"


def recorded(name: str) -> dict[str, Any]:
    return json.loads((RECORDED / f"{name}.json").read_text())


def start(run: dict[str, Any], account_input: dict[str, Any], **overrides: Any) -> WorkflowState:
    """The recorded run's execution input (its script as an uploaded source, a budget for every recorded job), with
    the rules its jobs ran: a recording made before a default rule was added replays as it ran."""
    ran = [rule["RuleConfigurationName"] for rule in run["jobs"][0]["rule_status"]["rules"]]
    spec = {**account_input, "rules": ran, **run["run_spec"], "max_num_retraining": 10, **overrides}
    if "entry_point" in spec:
        spec["source_dir"] = SOURCE
    return initial_state(spec)


def finish(state: WorkflowState, job: dict[str, Any]) -> WorkflowState:
    """Launch the next job and record how the recorded job ended, as the train and monitor Lambdas do."""
    assert state.run_spec.hyperparameters == job["hyperparameters"], "the recorded job ran other hyperparameters"
    describe = job["describe"]
    state = state.with_new_attempt(describe["TrainingJobName"])
    document = RuleStatusDocument.from_dict(job["rule_status"])
    reading = RuleReading(statuses=tuple(document.rules), document=document)
    decision = decide(describe, reading.statuses, state, metrics_saved_by_script(document))
    return apply_decision(state, decision, describe, reading)


def without_optimizer(job: dict[str, Any]) -> dict[str, Any]:
    """The same job as a debugger that does not report the optimizer wrote it."""
    evidence = {key: value for key, value in job["rule_status"]["evidence"].items() if key not in ("optimizer",)}
    return {**job, "rule_status": {**job["rule_status"], "evidence": evidence}}


def scored_higher(job: dict[str, Any], by: float) -> dict[str, Any]:
    """The same job as if its held-out reports had each been ``by`` higher."""
    metrics = {name: {**metric, "value": metric["value"] + by, "values": [value + by for value in metric["values"]]}
               for name, metric in job["rule_status"]["metrics"].items()}  # fmt: skip
    return {**job, "rule_status": {**job["rule_status"], "metrics": metrics}}


def final_metric_only(job: dict[str, Any]) -> dict[str, Any]:
    """The same job as a script that reports its held-out metric once, at the end, wrote it (no course)."""
    metrics = {name: {**metric, "values": metric["values"][-1:]} for name, metric in job["rule_status"]["metrics"].items()}
    return {**job, "rule_status": {**job["rule_status"], "metrics": metrics}}


def quiet_miss(name: str, account_input: dict[str, Any], **overrides: Any):
    run = recorded(name)
    state = finish(start(run, account_input, **overrides), run["jobs"][0])
    assert state.last_attempt.outcome == "objective_missed"
    assert {status.status for status in state.last_attempt.rule_statuses} == {"NoIssuesFound"}
    planned = plan(state)
    return run["jobs"][0], planned, planned.last_attempt.decision
