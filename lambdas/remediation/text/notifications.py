"""What subscribers are told at each step of the workflow, and the SNS Publish request for it.

A :class:`Notification` has a readable subject (SNS: printable ASCII, no line
breaks, under 100 characters), a JSON body and an ``event_type`` that also goes
into the ``event_type`` message attribute so subscriptions can filter on it:

* ``job_launched``  a training job was launched (attempt n of the budget);
* ``issues_found``  a job ended short and another is launched (a rule fired, the objective was missed, the job
  ran out of memory): what, at which step, what the planner changes;
* ``completed``     a job completed cleanly: final run_spec, attempts, metrics;
* ``gave_up``       the workflow ended without a clean job, and why;
* ``workflow_error`` a state failed (the ASL's Catch: Error and Cause).

Pure: :func:`publish_request` returns the keyword arguments of SNS Publish.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from contracts.remedies import show
from contracts.rule_status import not_judged_sentence
from lambdas.remediation.state.attempts import Attempt
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.product_changes import product_changes
from lambdas.remediation.state.validation_messages import clip
from lambdas.remediation.text.decision_text import describe_product_changes, short_action

EventType = Literal["job_launched", "issues_found", "completed", "gave_up", "workflow_error"]
EVENT_TYPES = get_args(EventType)

SUBJECT_PREFIX = "[remediation]"
#: SNS: "must be less than 100 characters long".
MAX_SUBJECT_LENGTH = 99
#: SNS caps a message (body and attributes) at 256 KiB; the body stays well under it.
MAX_MESSAGE_BYTES = 200_000
MAX_ERROR_CAUSE_LENGTH = 4000

_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]+")


@dataclasses.dataclass(frozen=True)
class Notification:
    subject: str
    body: dict[str, Any]
    event_type: EventType

    def __post_init__(self) -> None:
        if self.event_type not in EVENT_TYPES:
            raise ValueError(f"event_type: must be one of {', '.join(EVENT_TYPES)} (got {self.event_type!r})")
        object.__setattr__(self, "subject", sns_subject(self.subject))

    def message(self) -> str:
        """The body as JSON text, shrunk to MAX_MESSAGE_BYTES if ever needed."""
        return bounded_json(self.body, MAX_MESSAGE_BYTES)


def publish_request(topic_arn: str, notification: Notification) -> dict[str, Any]:
    """Keyword arguments for ``sns.publish(**...)``."""
    if not topic_arn.startswith("arn:") or ":sns:" not in topic_arn:
        raise ValueError(
            f"topic_arn: must be an SNS topic ARN such as arn:aws:sns:us-east-1:123456789012:name (got {topic_arn!r})"
        )
    return {
        "TopicArn": topic_arn,
        "Subject": notification.subject,
        "Message": notification.message(),
        "MessageAttributes": {"event_type": {"DataType": "String", "StringValue": notification.event_type}},
    }


# --------------------------------------------------------------------------- events


def job_launched(state: WorkflowState) -> Notification:
    """A job was launched: what it runs, and every change the product made to it (hyperparameters, the debugger's
    loss settings, rule parameters) against the run_spec the run started with."""
    attempt = _require_attempt(state, "job_launched")
    subject = f"{SUBJECT_PREFIX} Attempt {_attempt_of(state, attempt.number)} launched: {attempt.summary()}"
    changes = product_changes(state, attempt)
    changed = f" Changed by the product from your run_spec: {describe_product_changes(changes)}." if changes else ""
    body = {
        **_common("job_launched", state),
        "summary": f"Launched training job {attempt.job_name} (attempt {_attempt_of(state, attempt.number)}) with "
        f"{attempt.summary(400)}.{changed}",
        "job_name": attempt.job_name,
        "changed_by_product": {name: change.model_dump(mode="json") for name, change in changes.items()},
        "run_spec": state.run_spec.model_dump(mode="json"),
    }
    return Notification(subject, body, "job_launched")


def issues_found(state: WorkflowState) -> Notification:
    """After plan decided to relaunch: what fired (or which objective was missed), where, and what changes."""
    attempt = _require_attempt(state, "issues_found")
    rule, step = _rule_and_step(attempt)
    decision = attempt.decision
    where = _where(attempt, step)
    if attempt.outcome == "objective_missed" and attempt.issue is not None:  # stopped by ObjectiveOutOfReach
        rule = f"Objective out of reach ({_objective_text(state, attempt)})"
    elif attempt.outcome == "objective_missed":
        rule, where = f"Objective missed ({_objective_text(state, attempt)})", ""
    elif attempt.outcome == "out_of_memory":
        rule, where = "Out of memory", ""
    elif attempt.outcome == "batch_of_one":
        rule, where = "A training batch of one sample", ""
    if decision is not None and decision.next_action == "launch_new":
        action = f"{short_action(decision, state.kinds())}, relaunching (attempt {_attempt_of(state, attempt.number + 1)})"
    else:
        action = "planning the next step"
    subject = f"{SUBJECT_PREFIX} {rule}{where}: {action}"
    body = {
        **_common("issues_found", state),
        "summary": decision.reason if decision else f"{rule} found an issue{where} in job {attempt.job_name}.",
        "job_name": attempt.job_name,
        "rule": rule,
        "step": step,
        "issue": _dump(attempt.issue),
        "evidence": _dump(attempt.evidence),
        "decision": _dump(decision),
        "objective": state.objective,
        "objective_value": attempt.objective_value,
        "next_run_spec": state.run_spec.model_dump(mode="json"),
    }
    return Notification(subject, body, "issues_found")


def completed(state: WorkflowState) -> Notification:
    attempt = _require_attempt(state, "completed")
    count = state.attempt_count
    subject = (
        f"{SUBJECT_PREFIX} Completed after {count} attempt{'s' if count != 1 else ''}: "
        f"{_objective_text(state, attempt)}, {_what_changed(state, attempt)}"
    )
    body = {
        **_common("completed", state),
        "summary": _with_not_judged(state.end_reason or f"Job {attempt.job_name} completed with no rule issues.", attempt),
        "not_judged": [item.to_json() for item in attempt.not_judged()],
        "job_name": attempt.job_name,
        "final_hyperparameters": dict(attempt.hyperparameters),
        "objective": state.objective,
        "objective_value": attempt.objective_value,
        "metrics": json.loads(attempt.model_dump_json(include={"metrics"}))["metrics"],
        "attempts": _attempt_lines(state),
    }
    return Notification(subject, body, "completed")


def gave_up(state: WorkflowState) -> Notification:
    attempt = state.last_attempt
    count = state.attempt_count
    cause = _give_up_cause(attempt)
    subject = f"{SUBJECT_PREFIX} Gave up after {count} attempt{'s' if count != 1 else ''}: {cause}"
    body = {
        **_common("gave_up", state),
        "summary": _with_not_judged(state.end_reason or cause, attempt),
        "not_judged": [item.to_json() for item in attempt.not_judged()] if attempt else [],
        "cause": cause,
        "job_name": attempt.job_name if attempt else None,
        "objective": state.objective,
        "objective_value": attempt.objective_value if attempt else None,
        "last_run_spec": state.run_spec.model_dump(mode="json"),
        "attempts": _attempt_lines(state),
    }
    return Notification(subject, body, "gave_up")


def workflow_error(error: str, cause: str = "", state: WorkflowState | None = None) -> Notification:
    """A state failed; ``error``/``cause`` as the ASL's Catch gives them (a Lambda's cause is its error JSON)."""
    detail = _error_detail(cause)
    message = detail.get("errorMessage") or cause
    headline = f"{error}: {message}" if message else error
    subject = f"{SUBJECT_PREFIX} Workflow error: {headline}"
    body: dict[str, Any] = {
        "event_type": "workflow_error",
        "summary": f"The workflow failed with {headline}",
        "error": clip(error, 256),
        "cause": detail or clip(cause, MAX_ERROR_CAUSE_LENGTH),
    }
    if state is not None:
        body.update({key: value for key, value in _common("workflow_error", state).items() if key != "event_type"})
    return Notification(subject, body, "workflow_error")


def for_state(state: WorkflowState) -> Notification:
    """The notification that fits the state a handler just produced."""
    attempt = state.last_attempt
    if state.next_action == "end":
        return completed(state) if attempt is not None and attempt.outcome == "completed" else gave_up(state)
    if state.next_action == "launch_new" and attempt is not None and attempt.decision is not None:
        return issues_found(state)
    if state.next_action == "monitor" and attempt is not None:
        return job_launched(state)
    raise ValueError(
        f"state.next_action: no notification fits next_action={state.next_action!r} with "
        f"{'no attempt' if attempt is None else f'attempt {attempt.number} ({attempt.outcome})'}"
    )


# --------------------------------------------------------------------------- helpers


def sns_subject(text: str) -> str:
    """Printable ASCII on one line, under 100 characters, starting with a letter, digit or punctuation."""
    flat = _NOT_PRINTABLE_ASCII.sub(" ", text).strip()
    flat = re.sub(r" {2,}", " ", flat) or "remediation"
    return clip(flat, MAX_SUBJECT_LENGTH)


def bounded_json(body: Mapping[str, Any], limit: int) -> str:
    """JSON text of at most ``limit`` bytes: long lists and strings are cut, with a note, until it fits."""
    text = json.dumps(body, default=str, allow_nan=False)
    if len(text.encode("utf-8")) <= limit:
        return text
    shrunk: dict[str, Any] = dict(body)
    for key in ("attempts", "evidence", "issue", "run_spec", "next_run_spec", "final_hyperparameters", "last_run_spec"):
        if key in shrunk:
            shrunk[key] = "(left out: message size limit)"
            text = json.dumps(shrunk, default=str, allow_nan=False)
            if len(text.encode("utf-8")) <= limit:
                return text
    budget = max(64, limit // (4 * max(1, len(shrunk))))
    shrunk = {key: clip(value, budget) if isinstance(value, str) else value for key, value in shrunk.items()}
    text = json.dumps(shrunk, default=str, allow_nan=False)
    if len(text.encode("utf-8")) <= limit:
        return text
    return json.dumps({"event_type": body.get("event_type"), "summary": clip(str(body.get("summary", "")), limit // 8)})


def _common(event_type: str, state: WorkflowState) -> dict[str, Any]:
    return {
        "event_type": event_type,
        "attempt": state.attempt_count,
        "max_attempts": state.max_attempts,
        "policy": state.policy,
        "next_action": state.next_action,
        "job_status": state.job_status,
        "rule_status": state.rule_status,
        "history": state.history.model_dump(mode="json"),
        "end_reason": state.end_reason,
    }


def _attempt_of(state: WorkflowState, number: int) -> str:
    return f"{number}/{state.max_attempts}"


def _require_attempt(state: WorkflowState, event: str) -> Attempt:
    if state.last_attempt is None:
        raise ValueError(f"state.attempts: a {event} notification needs an attempt; the state has none")
    return state.last_attempt


def _where(attempt: Attempt, step: int | None) -> str:
    """' at step 7 (saved as global step 9)': the step as the user counts it (contracts.step_names), '' without one."""
    if step is None:
        return ""
    if attempt.issue is not None and attempt.issue.step == step:
        return f" at {attempt.issue.step_name()}"
    return f" at step {step}"


def _rule_and_step(attempt: Attempt) -> tuple[str, int | None]:
    if attempt.issue is not None:
        return attempt.issue.rule, attempt.issue.step
    for status in attempt.rule_statuses:
        if status.status == "IssuesFound":
            return status.name, status.step
    return "A rule", None


def _what_changed(state: WorkflowState, attempt: Attempt) -> str:
    """'with add_batch_norm=true' (what differs from the first attempt), or 'as first launched'."""
    first = state.attempts[0].hyperparameters if state.attempts else {}
    changed = {name: value for name, value in attempt.hyperparameters.items() if first.get(name) != value}
    if not changed:
        return "as first launched"
    return "with " + ", ".join(f"{name}={show(value)}" for name, value in changed.items())


def _objective_text(state: WorkflowState, attempt: Attempt) -> str:
    """'test:accuracy 0.97 (>= 0.9)', or 'no objective declared'."""
    objective = state.declared_objective()
    if objective is None:
        return "no objective declared"
    value = "not reported" if attempt.objective_value is None else show(attempt.objective_value)
    return f"{objective.metric_name} {value} ({objective.comparison} {show(objective.target_value)})"


def _give_up_cause(attempt: Attempt | None) -> str:
    if attempt is None:
        return "no job was launched"
    if attempt.decision is not None and attempt.decision.end_cause == "instance_hours_spent":
        return "the stack's instance-hours guardrail is spent"
    if attempt.outcome == "issues_found":
        rule, step = _rule_and_step(attempt)
        where = _where(attempt, step)
        if attempt.decision is not None and attempt.decision.end_cause == "budget_spent":  # as the planner decided
            return f"{rule}{where}, relaunch budget spent"
        return f"{rule}{where}, no remedy left"
    return {
        "algorithm_error": "the training code failed",
        "capacity_error": "no capacity",
        "stopped": "the job was stopped outside the workflow",
        "failed": "the job failed",
        "monitor_limit": "max_monitor_transitions reached",
        "objective_missed": "objective missed, no remedy left"
        if attempt.decision is None or attempt.decision.end_cause != "budget_spent"
        else "objective missed, relaunch budget spent",
        "objective_unmeasured": "the objective's metric was never reported",
        "missing_evidence": "the job's rules never reported",
        "out_of_memory": "out of memory, no remedy left"
        if attempt.decision is None or attempt.decision.end_cause != "budget_spent"
        else "out of memory, relaunch budget spent",
        "batch_of_one": "a training batch of one sample, no remedy left"
        if attempt.decision is None or attempt.decision.end_cause != "budget_spent"
        else "a training batch of one sample, relaunch budget spent",
        "data_error": "the data is wrong, not remediable",
        "max_runtime_exceeded": "the job reached its MaxRuntimeInSeconds, no launch left to continue it",
        "running": "ended while the job was running",
        "completed": "ended",
    }[attempt.outcome]


def _attempt_lines(state: WorkflowState) -> list[dict[str, Any]]:
    lines = []
    for attempt in state.attempts:
        rule, step = _rule_and_step(attempt) if attempt.outcome == "issues_found" else (None, None)
        lines.append(
            {
                "number": attempt.number,
                "job_name": attempt.job_name,
                "outcome": attempt.outcome,
                "rule": rule,
                "step": step,
                "hyperparameters": attempt.summary(),
                "objective_value": attempt.objective_value,
                "remedy": attempt.decision.remedy if attempt.decision else None,
                "not_judged": [item.to_json() for item in attempt.not_judged()],
            }
        )
    if state.attempts_dropped:
        lines.insert(1, {"dropped": state.attempts_dropped})
    return lines


def _with_not_judged(summary: str, attempt: Attempt | None) -> str:
    """The final summary, and which rules could not judge the last job and why: their quiet status is no verdict."""
    sentence = not_judged_sentence(attempt.job_name, attempt.not_judged()) if attempt is not None else ""
    return f"{summary} {sentence}" if sentence else summary


def _dump(model: Any) -> Any:
    return None if model is None else json.loads(model.model_dump_json())


def lambda_error(cause: str) -> dict[str, Any]:
    """A Lambda failure's Cause is its error JSON (errorMessage, errorType, stackTrace); {} for any other cause."""
    try:
        parsed = json.loads(cause)
    except (TypeError, json.JSONDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _error_detail(cause: str) -> dict[str, Any]:
    """The Lambda error in ``cause``, kept short."""
    parsed = lambda_error(cause)
    detail: dict[str, Any] = {}
    for key in ("errorType", "errorMessage"):
        if isinstance(parsed.get(key), str):
            detail[key] = clip(parsed[key], MAX_ERROR_CAUSE_LENGTH)
    trace = parsed.get("stackTrace")
    if isinstance(trace, list):
        detail["stackTrace"] = [clip(str(frame), 300) for frame in trace[-5:]]
    return detail
