"""What a local run leaves behind: the run directory's files and the machine-readable summary.

<run dir>/summary.json              the run in figures: attempts, launches, steps, accuracy;
                                    training_process_seconds = wall seconds with a training process
                                    running, orchestration_overhead_seconds = the rest of the wall time
<run dir>/execution.json            describe_execution at the end
<run dir>/execution-history.json    every Step Functions history event
<run dir>/final-payload.json        the state payload at the end ({"state": ...})
<run dir>/notifications.json        every SNS notification, in arrival order
<run dir>/training-curves.png       loss, gradient norm and learning rate per attempt, the rules that fired
                                    (remediate.run_figure)
<run dir>/jobs/<job>/training.log   each job's log (and its /opt/ml-like folders)
<run dir>/buckets/<bucket>/...      the local S3 mirror: debug-output/<job>/, checkpoints/<job>/, jobs/<job>/output/
<run dir>/lambda.log                the handlers' log lines (and Python warnings)
<run dir>/interpreter.log           moto's Step Functions interpreter (failed states, with their causes)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contracts.atomic_files import write_atomically
from contracts.step_names import step_name
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.product_changes import product_changes
from local_runtime.job_hosts import LOG_FILE
from local_runtime.job_process import format_bytes
from local_runtime.training_platform import LocalTrainingPlatform
from remediate import run_figure, run_steps

SUMMARY_FILE = "summary.json"
EXECUTION_FILE = "execution.json"
HISTORY_FILE = "execution-history.json"
FINAL_PAYLOAD_FILE = "final-payload.json"
NOTIFICATIONS_FILE = "notifications.json"
PLOT_FILE = "training-curves.png"


def write_json(path: Path, value: Any) -> None:
    """Atomically; non-finite floats become strings ("nan", "inf") so the file stays strict JSON."""
    text = json.dumps(_json_safe(value), indent=2, default=str, allow_nan=False)
    write_atomically(path, lambda handle: handle.write(text), mode="w")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


#: A metric that is an accuracy on data the model did not train on: "validation:accuracy", "test:accuracy",
#: "val_acc", "eval-accuracy", "held_out_accuracy".
HELD_OUT_ACCURACY = re.compile(r"(valid|val|test|eval|held[-_ ]?out).*acc", re.IGNORECASE)
#: Where the built-in example's held-out accuracy comes from.
EPOCH_LINE_ACCURACY = "test_accuracy (the epoch lines)"


def held_out_accuracy(metrics: Mapping[str, float | None]) -> tuple[float | None, str | None]:
    """(value, metric name) of the first held-out accuracy among ``metrics``; (None, None) when there is none."""
    for name, value in metrics.items():
        if value is not None and HELD_OUT_ACCURACY.search(name):
            return value, name
    return None, None


def job_figures(platform: LocalTrainingPlatform, name: str) -> dict[str, Any]:
    """What the job's log, its debugger's status document and its record say: steps, last loss and gradient
    norm, held-out accuracy (the built-in example's progress lines, else an accuracy on validation or test data
    the script saved with the debugger), how its process ended, seconds."""
    job = platform.job(name)
    platform.read_progress(job)
    status = platform.rule_status_document(job)
    with job.lock:
        steps = list(job.steps)
        epochs = list(job.epochs)
        last_step = steps[-1]["step"] if steps else (status.last_step if status and status.last_step >= 0 else None)
        figures = {
            "job_name": name,
            "status": job.status,
            "secondary_status": job.secondary_status,
            "failure_reason": job.failure_reason,
            "exit_code": job.exit_code,
            "killed_by_signal": job.killed_by_signal,
            "peak_memory_bytes": job.peak_memory_bytes,
            "training_steps": len(steps) if steps else (last_step + 1 if last_step is not None else 0),
            "last_step": last_step,
            "last_loss": steps[-1].get("loss") if steps else (status.evidence.last_finite_loss if status else None),
            "last_gradient_norm": steps[-1].get("gradient_norm") if steps else None,
            "held_out_accuracy": epochs[-1].get("test_accuracy") if epochs else None,
            "held_out_accuracy_metric": EPOCH_LINE_ACCURACY if epochs else None,
            "training_process_seconds": round(job.process_seconds, 3),
            # a local run's spot interruptions (run_spec spot_interruptions): what was asked, the step reached, the
            # checkpoint files the restarted job found
            "spot_interruptions": [dict(interruption) for interruption in job.interruptions],
            "log": str(job.job_dir / LOG_FILE),
        }
    if figures["held_out_accuracy"] is None and status is not None:
        saved = {metric: value.value for metric, value in status.metrics.items()}
        figures["held_out_accuracy"], figures["held_out_accuracy_metric"] = held_out_accuracy(saved)
    return figures


def attempts_summary(payload: dict[str, Any] | None, platform: LocalTrainingPlatform | None) -> list[dict[str, Any]]:
    """One row per launched job: the payload's attempt record joined with the job's own figures."""
    if platform is None:
        return []
    recorded, changed = {}, {}
    if payload:
        for attempt in payload.get("state", {}).get("attempts", []):
            recorded[attempt["job_name"]] = attempt
        changed = changes_by_job(payload)
    rows = []
    for number, name in enumerate(platform.job_names(), start=1):
        attempt = recorded.get(name, {})
        issue = attempt.get("issue") or {}
        decision = attempt.get("decision") or {}
        row = {
            "number": attempt.get("number", number),
            "hyperparameters": dict(attempt.get("hyperparameters", {})),
            "debugger_settings": dict(attempt.get("debugger_settings", {})),
            "changed_by_product": changed.get(name, {}),
            "outcome": attempt.get("outcome"),
            "objective_value": attempt.get("objective_value"),
            "rule": issue.get("rule"),
            "issue_step": issue.get("step"),
            # the step as the user counts it (contracts.step_names), for the report's sentences
            "issue_step_name": step_name(issue["step"], issue.get("optimizer_step"), bool(issue.get("evaluation_pass")), with_global=True)
            if issue.get("step") is not None else None,
            "decision": decision.get("remedy"),
            "decision_reason": decision.get("reason"),
            "not_judged": not_judged_of(attempt),
        }
        row.update(job_figures(platform, name))
        reported, metric = held_out_accuracy(attempt.get("metrics") or {})  # the run_spec's metric regexes
        if reported is not None and row["held_out_accuracy_metric"] != EPOCH_LINE_ACCURACY:
            row["held_out_accuracy"], row["held_out_accuracy_metric"] = reported, metric
        row["result"] = attempt_result(row)
        rows.append(row)
    return rows


def not_judged_of(attempt: Mapping[str, Any]) -> list[dict[str, str]]:
    """The rules that could not judge the attempt's job, and why (its quiet status is no verdict): the payload's
    attempt record, as ``lambdas.remediation.state.attempts.Attempt.not_judged`` reads it."""
    return [
        {"rule": status["name"], "why": status["not_judged"]}
        for status in attempt.get("rule_statuses", [])
        if status.get("not_judged")
    ]


def changes_by_job(payload: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Each kept attempt's job -> every change the product made to it, as the launch notification lists them
    (``lambdas.remediation.state.product_changes``); none when the payload is not a workflow state."""
    try:
        state = WorkflowState.model_validate(payload["state"])
    except (KeyError, TypeError, ValueError):
        return {}
    return {
        attempt.job_name: {name: change.model_dump(mode="json") for name, change in product_changes(state, attempt).items()}
        for attempt in state.attempts
    }


def attempt_result(row: dict[str, Any]) -> str:
    """How the attempt ended, in words: the workflow's outcome where it has one, the job's own end otherwise
    (a job still recorded as running when the loop ended was stopped with it)."""
    outcome = row.get("outcome")
    status = row.get("status")
    if row.get("rule"):
        named = row.get("issue_step_name") or (f"step {row['issue_step']}" if row.get("issue_step") is not None else None)
        step = f" at {named}" if named else ""
        return f"stopped by {row['rule']}{step}"
    if row.get("killed_by_signal"):
        memory = f", peak memory {format_bytes(row['peak_memory_bytes'])}" if row.get("peak_memory_bytes") else ""
        kind = " (out of memory)" if outcome == "out_of_memory" or row["killed_by_signal"] == "SIGKILL" else ""
        return f"killed by {row['killed_by_signal']}{kind}{memory}"
    if outcome in (None, "running"):
        if status == "Completed":
            return "completed (not judged: the loop ended first)"
        if status in ("Stopped", "Stopping"):
            return "stopped when the loop ended"
        if status == "Failed":
            return "failed"
        return "still running" if status == "InProgress" else (status or "unknown").lower()
    return outcome.replace("_", " ")


def build_summary(
    *,
    run_dir: Path,
    execution_input: dict[str, Any],
    description: dict[str, Any] | None,
    payload: dict[str, Any] | None,
    platform: LocalTrainingPlatform | None,
    notifications: list[dict[str, Any]],
    wall_seconds: float,
    interrupted: dict[str, Any] | None,
) -> dict[str, Any]:
    """``interrupted``: the signal, when and during what (``remediate.interruption.Interrupted.to_json``)."""
    attempts = attempts_summary(payload, platform)
    # Success is the workflow's verdict: completed with quiet rules and, when declared, the objective met.
    succeeded = [row for row in attempts if row["outcome"] == "completed"]
    process_seconds = platform.seconds_with_a_process_running() if platform is not None else 0.0
    state = (payload or {}).get("state", {})
    return {
        "run_dir": str(run_dir),
        "execution_arn": (description or {}).get("executionArn"),
        "execution_status": (description or {}).get("status"),
        "interrupted": interrupted is not None,
        "interruption": interrupted,
        "policy": state.get("policy", execution_input.get("policy")),
        "objective": state.get("objective"),
        "execution_input": execution_input,
        "launches": len(attempts),
        "launches_until_success": (attempts.index(succeeded[0]) + 1) if succeeded else None,
        "successful_job": succeeded[0]["job_name"] if succeeded else None,
        "objective_value": succeeded[0]["objective_value"] if succeeded else None,
        "held_out_accuracy": succeeded[0]["held_out_accuracy"] if succeeded else None,
        "held_out_accuracy_metric": succeeded[0]["held_out_accuracy_metric"] if succeeded else None,
        "total_training_steps": sum(row["training_steps"] for row in attempts),
        "wall_seconds": round(wall_seconds, 3),
        "training_process_seconds": round(process_seconds, 3),
        "orchestration_overhead_seconds": round(max(0.0, wall_seconds - process_seconds), 3),
        "history": state.get("history"),
        "end_reason": state.get("end_reason"),
        # the last job's rules that could not judge it, and why
        "not_judged": attempts[-1]["not_judged"] if attempts else [],
        "notifications": len(notifications),
        "training_processes_left": platform.running_process_ids() if platform is not None else [],
        "attempts": attempts,
        "files": {
            "summary": SUMMARY_FILE,
            "execution": EXECUTION_FILE,
            "history": HISTORY_FILE,
            "final_payload": FINAL_PAYLOAD_FILE,
            "notifications": NOTIFICATIONS_FILE,
            "plot": PLOT_FILE,
            "jobs": "jobs/",
            "buckets": "buckets/",
            "lambda_log": "lambda.log",
            "interpreter_log": "interpreter.log",
        },
    }


def write_run_files(
    run_dir: Path,
    summary: dict[str, Any],
    description: dict[str, Any] | None,
    history: list[dict[str, Any]],
    payload: dict[str, Any] | None,
    notifications: list[dict[str, Any]],
    platform: LocalTrainingPlatform | None,
) -> None:
    """Every file of the run directory; summary.json last, so its presence means the rest is there."""
    write_json(run_dir / EXECUTION_FILE, description or {})
    write_json(run_dir / HISTORY_FILE, history)
    write_json(run_dir / FINAL_PAYLOAD_FILE, payload or {})
    write_json(run_dir / NOTIFICATIONS_FILE, notifications)
    if platform is not None:
        plot_training_curves(platform, run_dir / PLOT_FILE, summary)
    write_json(run_dir / SUMMARY_FILE, summary)


def plot_training_curves(platform: LocalTrainingPlatform, path: Path, summary: dict[str, Any] | None = None) -> Path:
    """The run's figure (:mod:`remediate.run_figure`) from the platform's jobs and the summary's attempts: each job's
    progress lines, filled in step by step from what its debugger saved (:func:`remediate.run_steps.job_steps`)."""
    attempts = (summary or {}).get("attempts") or attempts_summary(None, platform)
    steps = {}
    for name in platform.job_names():
        job = platform.job(name)
        platform.read_progress(job)
        with job.lock:
            log_steps = list(job.steps)
        steps[name] = run_steps.job_steps(log_steps, platform.debug_output_dir(job), platform.tensorboard_dir(job))
    names = ((summary or {}).get("execution_input") or {}).get("hyperparameter_names")
    figure = run_figure.training_curves_figure(attempts, steps, (summary or {}).get("objective"), names)
    write_atomically(path, lambda handle: figure.savefig(handle, format="png", dpi=100))
    return path
