"""The fault harness held to its claims (finding 8 of issue 45): each safeguard of the cloud loop, disabled in turn,
breaks an invariant the harness checks (fault_harness.check_invariants), in a scenario where that safeguard is the one
that holds; with it in place the same scenario breaks none. A safeguard no invariant misses is one the harness does not
test.

| safeguard (what is disabled)                                  | scenario                                                | invariant that fails                                  |
| launch check: the train Lambda stops its own job when its      | stopped just before the 2nd CreateTrainingJob; the      | 1a: a job launched after the execution ended runs on |
|   execution ended (launch_guard.stop_if_execution_ended)       |   cleanup fails on every try (its event to the DLQ)     |                                                       |
| second look: the cleanup looks again after the train Lambda's  | stopped just before the 2nd CreateTrainingJob; the      | 1a: a job launched after the execution ended runs on |
|   timeout (execution_cleanup.look_again_for_a_launch)          |   train Lambda cannot ask whether its execution runs    |                                                       |
| rule-status check: success only with every rule NoIssuesFound  | a completed job with a rule in Error; with SageMaker's  | 3: no success unless every rule that must report said |
|   (job_endings.rule_verdicts)                                  |   evaluation still InProgress (legacy mode)             |   NoIssuesFound                                       |
| retry lists: every Retry of the state machine                  | one throttled invoke of the monitor while a healthy job | 4: no healthy job stopped; 7: no run ends on a fault  |
|                                                                |   trains                                                |   within its retries                                  |
| cleanup: every stop of a job the execution left                | stopped while its job trains on (it never ends by       | 1b: no job left running once the execution ended      |
|   (execution_cleanup.stop_owned_jobs)                          |   itself)                                               |                                                       |
| end judged: notified and alarmed whatever state it ended in    | every Lambda invoke after Initialize throttled          | 6: no end silent (notified, and alarmed unless        |
|   (end_causes.judge_end)                                       |                                                         |   expected)                                           |
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from fault_harness import check_invariants
from workflow_harness import ASL_PATH, BASE_INPUT, FUNCTION_ARNS, completed, issues_found, running

from lambdas import train_handler
from lambdas.remediation.job import execution_cleanup
from lambdas.remediation.monitoring import job_endings
from lambdas.remediation.state import end_causes


def function_is(name: str):
    return lambda call: call.params["FunctionName"].endswith(f"function:remediation-{name}")


def run(
    workflow,
    faults,
    execution_input: dict[str, Any],
    state_machine_arn: str | None = None,
    unhealthy: int = 0,
) -> list[str]:
    """Run the execution and check every invariant; the first ``unhealthy`` jobs are not healthy ones (the monitor
    may stop them), the rest are."""
    arn = workflow.start(execution_input, state_machine_arn)
    described = workflow.wait(arn, timeout=180)
    faults.settle(arn)
    described = workflow.sfn.describe_execution(executionArn=arn)
    healthy = {request["TrainingJobName"] for request in workflow.sagemaker.created[unhealthy:]}
    aborted = any(planned.stopped for planned in faults.aborts)
    return check_invariants(
        workflow, faults, described, healthy_jobs=healthy, aborted=aborted
    )


# --------------------------------------------------------------------------- the scenarios


def stopped_while_launching(workflow, faults, cleanup_down: bool, train_cannot_ask: bool) -> list[str]:
    """Two attempts: the first explodes (the monitor stops it), the execution is stopped just before the second's
    CreateTrainingJob; the train Lambda goes on and creates it after the end."""
    workflow.script([issues_found("ExplodingTensor", step=2)], [running()])
    if cleanup_down:  # 8 tries in each of Lambda's 3 asynchronous attempts: its event goes to the dead-letter queue
        faults.schedule.add("sfn", "GetExecutionHistory", "throttle", times=8 * 3)
    if train_cannot_ask:  # DescribeExecution throttled through the client's tries: the launch check cannot tell
        faults.schedule.add("sfn", "DescribeExecution", "throttle", times=10)
    faults.abort("train", "CreateTrainingJob", occurrence=2)
    return run(workflow, faults, {**BASE_INPUT, "max_num_retraining": 3}, unhealthy=1)


def completed_with_a_rule_in_error(workflow, faults) -> list[str]:
    workflow.script([completed(errors=("VanishingGradient",))])
    return run(workflow, faults, {**BASE_INPUT, "max_num_retraining": 1})


def completed_with_sagemakers_evaluation_in_progress(workflow, faults) -> list[str]:
    legacy = {f"Sagemaker{name}": "NoIssuesFound" for name in ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing")}
    workflow.script([completed(legacy={**legacy, "SagemakerVanishingGradient": "InProgress"})])
    return run(workflow, faults, {**BASE_INPUT, "max_num_retraining": 1, "legacy_sagemaker_debugger": True})


def one_throttled_monitor_invoke(workflow, faults, state_machine_arn: str | None = None) -> list[str]:
    workflow.script([running(), completed()])
    faults.schedule.add("lambda", "Invoke", "throttle", times=1, when=function_is("monitor"))
    return run(workflow, faults, BASE_INPUT, state_machine_arn)


def stopped_while_its_job_trains_on(workflow, faults) -> list[str]:
    workflow.script([running()])
    faults.abort("job_events", "after", occurrence=1)
    return run(workflow, faults, {**BASE_INPUT, "monitor_interval_seconds": 60})


def every_invoke_after_initialize_throttled(workflow, faults) -> list[str]:
    workflow.script([completed()])
    faults.schedule.add("lambda", "Invoke", "throttle", times=10**6, skip=1)
    return run(workflow, faults, BASE_INPUT)


# --------------------------------------------------------------------------- the mutations


def without_retries(workflow) -> str:
    """A state machine like the stack's, with no Retry on any state; its ends reach the cleanup too."""
    definition = json.loads(ASL_PATH.read_text())
    for state in definition["States"].values():
        state.pop("Retry", None)
    text = json.dumps(definition)
    for key, value in FUNCTION_ARNS.items():
        text = text.replace("${" + key + "}", value)
    arn = workflow.sfn.create_state_machine(
        name="remediation-without-retries", definition=text, roleArn="arn:aws:iam::123456789012:role/StatesExecutionRole"
    )["stateMachineArn"]
    return arn


@dataclasses.dataclass(frozen=True)
class Safeguard:
    name: str
    scenario: Callable[..., list[str]]
    disable: Callable[[Any, Any, Any], dict[str, Any]]
    broken: str  # what the violation the disabled safeguard causes says


def _patch(target: Any, attribute: str, replacement: Any) -> Callable[[Any, Any, Any], dict[str, Any]]:
    def disable(monkeypatch, workflow, faults) -> dict[str, Any]:
        monkeypatch.setattr(target, attribute, replacement)
        return {}

    return disable


def _no_retries(monkeypatch, workflow, faults) -> dict[str, Any]:
    arn = without_retries(workflow)
    workflow.add_execution_cleanup_rule(arn, wrapper=faults._as_actor("execution_cleanup"))
    return {"state_machine_arn": arn}


def _unwrapped_verdicts(monkeypatch, workflow, faults) -> dict[str, Any]:
    original = job_endings.rule_verdicts

    def every_status_but_an_issue_clean(statuses, state):
        clean, pending, missing = original(statuses, state)
        return clean + [entry.split(" (")[0] for entry in missing] + pending, [], []

    monkeypatch.setattr(job_endings, "rule_verdicts", every_status_but_an_issue_clean)
    return {}


def _silent(status, error, cause, last_state):
    return end_causes.EndVerdict(error or status, "", notify=False, alarm=False)


SAFEGUARDS = [
    Safeguard(
        "launch check",
        lambda w, f, **kw: stopped_while_launching(w, f, cleanup_down=True, train_cannot_ask=False),
        _patch(train_handler.launch_guard, "stop_if_execution_ended", lambda *args, **kwargs: False),
        "launched after the execution ended",
    ),
    Safeguard(
        "second look",
        lambda w, f, **kw: stopped_while_launching(w, f, cleanup_down=False, train_cannot_ask=True),
        _patch(execution_cleanup, "look_again_for_a_launch", lambda *args, **kwargs: None),
        "launched after the execution ended",
    ),
    Safeguard(
        "rule-status check (Error)",
        lambda w, f, **kw: completed_with_a_rule_in_error(w, f),
        _unwrapped_verdicts,
        "succeeded although rule VanishingGradient reported Error",
    ),
    Safeguard(
        "rule-status check (legacy InProgress)",
        lambda w, f, **kw: completed_with_sagemakers_evaluation_in_progress(w, f),
        _unwrapped_verdicts,
        "SagemakerVanishingGradient reported InProgress",
    ),
    Safeguard(
        "retry lists",
        lambda w, f, **kw: one_throttled_monitor_invoke(w, f, kw.get("state_machine_arn")),
        _no_retries,
        "though no fault outlasted its retries",
    ),
    Safeguard(
        "cleanup",
        lambda w, f, **kw: stopped_while_its_job_trains_on(w, f),
        _patch(execution_cleanup, "stop_owned_jobs", lambda sagemaker, names, eid, start, report: report),
        "still runs after the execution ended ABORTED",
    ),
    Safeguard(
        "end judged",
        lambda w, f, **kw: every_invoke_after_initialize_throttled(w, f),
        _patch(end_causes, "judge_end", _silent),
        "no one was notified",
    ),
]
IDS = [safeguard.name for safeguard in SAFEGUARDS]


@pytest.mark.parametrize("safeguard", SAFEGUARDS, ids=IDS)
def test_with_the_safeguard_its_scenario_breaks_no_invariant(workflow, faults, safeguard):
    assert safeguard.scenario(workflow, faults) == []


@pytest.mark.parametrize("safeguard", SAFEGUARDS, ids=IDS)
def test_without_the_safeguard_an_invariant_fails(workflow, faults, monkeypatch, safeguard):
    changes = safeguard.disable(monkeypatch, workflow, faults)
    violations = safeguard.scenario(workflow, faults, **changes)
    assert any(safeguard.broken in violation for violation in violations), violations
