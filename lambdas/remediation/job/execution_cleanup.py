"""Stopping what an execution left running, and only that: a job is stopped only if its tags prove it is the
execution's (``job_identity.owned_by``: its ARN and start time), and never because a read failed.

Three callers: the monitor's Catch path (HandleFailure, with the failed state at hand), the execution-cleanup
Lambda (an execution that timed out, was aborted or failed outside its Catch: the state read back from its
history) and ``remediate cloud stop``.

An execution stopped while its Train task ran may still have a train Lambda running: Step Functions does not stop
a Lambda it invoked. That Lambda may create its job after the first look found none; it looks itself (it stops its
own job when its execution no longer runs), and the cleanup looks a second time once the train Lambda's timeout has
certainly passed (:func:`contracts.time_budgets.launch_settled_after`).

A read or stop that fails transiently is retried by the caller (AwsTransientError: the state machine retries
HandleFailure, Lambda and EventBridge retry the cleanup, then its dead-letter queue and alarm); one that fails
otherwise proves nothing about the job: it is left alone, and said so.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from contracts import time_budgets
from lambdas.remediation import handler_support
from lambdas.remediation.job import job_identity
from lambdas.remediation.state import execution_history
from lambdas.remediation.state.payload import WorkflowState, parse_state
from lambdas.remediation.state.validation_messages import InvalidExecutionInput


@dataclasses.dataclass
class CleanupReport:
    """What was done: ``notes`` one line each (stopped, already ended, not there, left alone and why: never empty once
    a cleanup has looked), ``stopped`` the jobs stopped."""

    notes: list[str] = dataclasses.field(default_factory=list)
    stopped: list[str] = dataclasses.field(default_factory=list)
    state: WorkflowState | None = None
    #: Jobs looked for that do not exist (yet: a launch may still be under way).
    not_found: list[str] = dataclasses.field(default_factory=list)
    #: The state the execution was in when it ended, from its history ('' when not read).
    last_state: str = ""
    #: The Error and Cause it ended with, from its history (None when not read).
    end_error: str | None = None
    end_cause: str | None = None


def jobs_that_may_run(state: WorkflowState, execution_id: str, execution_start_time: str) -> list[str]:
    """The latest job if it was still running, and the next attempt's job (a launch that failed half-way)."""
    jobs = []
    attempt = state.last_attempt
    if attempt is not None and attempt.outcome in ("running", "issues_found", "monitor_limit"):
        jobs.append(attempt.job_name)
    if state.next_action == "launch_new":
        try:
            identity = job_identity.execution_identity(execution_id, execution_start_time)
            jobs.append(job_identity.training_job_name(identity, state.run_spec.base_job_name, state.attempt_count + 1))
        except job_identity.JobRequestError:
            pass  # no identity, no name to look for
    return jobs


def stop_owned_jobs(
    sagemaker: Any, job_names: list[str], execution_id: str, execution_start_time: str, report: CleanupReport
) -> CleanupReport:
    """Stop each of ``job_names`` that runs and whose tags name this execution. Raises AwsTransientError (after
    looking at every job) when a read or stop failed transiently: the caller's retry looks again."""
    transient: list[str] = []
    for job_name in job_names:
        try:
            described = sagemaker.describe_training_job(TrainingJobName=job_name)
            if described.get("TrainingJobStatus") != "InProgress":
                report.notes.append(
                    f"training job {job_name} had already ended ({described.get('TrainingJobStatus')}): nothing to stop"
                )
                continue
            tags = handler_support.job_tags(sagemaker, described["TrainingJobArn"])
            if not job_identity.owned_by(tags, execution_id, execution_start_time):
                report.notes.append(f"left training job {job_name} running: its tags name another execution")
                continue
            handler_support.stop_training_job(sagemaker, job_name)
            report.notes.append(f"stopped training job {job_name}")
            report.stopped.append(job_name)
        except handler_support.AwsTransientError as error:
            transient.append(f"{job_name}: {error}")
        except (ClientError, BotoCoreError) as error:
            code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else ""
            if code in handler_support.NO_SUCH_JOB_OR_NOT_STOPPABLE:
                report.not_found.append(job_name)
                report.notes.append(f"no training job {job_name} exists: nothing to stop")
            elif handler_support.is_transient(error):
                transient.append(f"{job_name}: {code or type(error).__name__}: {error}")
            else:
                # A read that failed proves nothing about the job: it is left alone, and said so.
                report.notes.append(
                    f"could not check or stop training job {job_name} ({code or type(error).__name__}: "
                    f"{error}); left it as it is: stop it with `aws sagemaker stop-training-job "
                    f"--training-job-name {job_name}` if it still runs"
                )
    if transient:
        raise handler_support.AwsTransientError(
            f"checking or stopping {'; '.join(transient)} failed transiently; "
            f"{'; '.join(report.notes) or 'nothing done yet'}"
        )
    return report


def wait_until(epoch_seconds: float) -> None:
    """Sleep until ``epoch_seconds`` (the wall clock): the second look's wait."""
    delay = epoch_seconds - time.time()
    if delay > 0:
        time.sleep(delay)


def stop_jobs_of_ended_execution(
    stepfunctions: Any,
    sagemaker_for_region: Callable[[str], Any],
    execution_arn: str,
    start_date: dt.datetime | float | None = None,
    *,
    stop_date: dt.datetime | float | None = None,
    settle: Callable[[float], None] = wait_until,
    train_timeout_seconds: float = time_budgets.TRAIN_TIMEOUT_SECONDS,
) -> CleanupReport:
    """Read the execution's last moments from its history (newest first) and stop the job(s) it may have left
    running; when it ended in its Train state and the job it was launching was not there yet, look again once
    ``settle`` has waited for the train Lambda's timeout to pass after ``stop_date``.

    ``start_date`` (the execution's, a datetime or epoch milliseconds as events carry it) stands in for the start
    time the tasks got when the history holds no task yet.
    """
    moments = execution_history.read_last_moments(stepfunctions, execution_arn)
    report = CleanupReport(last_state=moments.current_state, end_error=moments.end_error, end_cause=moments.end_cause)
    if moments.state_payload is None:
        report.notes.append("no state in the execution's history: it launched no job")
        return report
    try:
        report.state = state = parse_state(moments.state_payload)
    except InvalidExecutionInput as error:
        report.notes.append(f"the execution's last state is not valid ({error}); no job to look for")
        return report
    started = moments.start_time or _as_start_time(start_date)
    jobs = jobs_that_may_run(state, execution_arn, started)
    if not jobs:
        report.notes.append("its last job had already ended")
        return report
    sagemaker = sagemaker_for_region(state.run_spec.region)
    stop_owned_jobs(sagemaker, jobs, execution_arn, started, report)
    if moments.current_state == "Train":
        look_again_for_a_launch(
            sagemaker,
            execution_arn,
            started,
            report,
            stop_date=stop_date,
            settle=settle,
            train_timeout_seconds=train_timeout_seconds,
        )
    return report


def look_again_for_a_launch(
    sagemaker: Any,
    execution_arn: str,
    started: str,
    report: CleanupReport,
    *,
    stop_date: dt.datetime | float | None,
    settle: Callable[[float], None],
    train_timeout_seconds: float,
) -> None:
    """The second look: the execution ended in its Train state and the job it was launching was not there at the first
    look; once the train Lambda's timeout has passed after ``stop_date`` (it has certainly returned), look for it
    again and stop it."""
    launching = list(report.not_found)
    if not launching:
        return
    stopped_at = _epoch_seconds(stop_date) if stop_date is not None else time.time()
    settle(time_budgets.launch_settled_after(stopped_at, train_timeout_seconds))
    report.not_found = []
    stop_owned_jobs(sagemaker, launching, execution_arn, started, report)
    if report.not_found:
        report.notes.append(
            f"looked twice for training job {launching[0]} (the execution ended while launching it): "
            "it was never created"
        )


def _epoch_seconds(value: dt.datetime | float) -> float:
    """An event's time (epoch milliseconds) or a datetime (DescribeExecution's, StopExecution's), as epoch seconds."""
    return value.timestamp() if isinstance(value, dt.datetime) else float(value) / 1000


def _as_start_time(start_date: dt.datetime | float | None) -> str:
    """$$.Execution.StartTime's form: ISO 8601 in UTC with milliseconds and a Z."""
    if start_date is None:
        return ""
    if not isinstance(start_date, dt.datetime):
        start_date = dt.datetime.fromtimestamp(float(start_date) / 1000, dt.UTC)
    return start_date.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def sagemaker_client(region: str) -> Any:
    return handler_support.client("sagemaker", region)
