"""Monitor Lambda: read the training job and every debugger rule status, stop the job on
IssuesFound, and tell the state machine the next step (wait | plan | relaunch | completed).

With ``action: "cleanup"`` it is the state machine's Catch path: stop the job if
one is running, notify ``workflow_error`` and name the error for the Fail state.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from lambdas.remediation import handler_support
from lambdas.remediation.job import execution_cleanup
from lambdas.remediation.monitoring import rule_reading
from lambdas.remediation.monitoring import verdict as monitoring
from lambdas.remediation.state.payload import WorkflowState, parse_state
from lambdas.remediation.state.validation_messages import InvalidExecutionInput, clip
from lambdas.remediation.text import notifications

logger = Logger(service=handler_support.SERVICE_NAME)
metrics = Metrics(namespace=handler_support.METRICS_NAMESPACE, service=handler_support.SERVICE_NAME)
tracer = Tracer(service=handler_support.SERVICE_NAME)

MAX_CAUSE_LENGTH = 32_000  # Step Functions caps a Fail cause at 32,768 characters


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@handler_support.counting_errors(metrics)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    handler_support.begin_invocation(context)
    task = handler_support.parse_task_event(event)
    logger.append_keys(execution_name=task.execution_name)
    if task.action == "cleanup":
        return clean_up(task.input or {}, task.execution_id, task.execution_start_time)

    state = parse_state({"state": task.state})
    job_name = state.history.latest_job_name
    if not job_name:
        raise InvalidExecutionInput({"state.history.latest_job_name": "is empty; the train step launches a job first"})
    logger.append_keys(job_name=job_name)
    history = state.history.model_copy(update={"num_monitor_transitions": state.history.num_monitor_transitions + 1})
    state = state.updated(history=history)

    region = state.run_spec.region
    sagemaker = handler_support.client("sagemaker", region)
    try:
        described = sagemaker.describe_training_job(TrainingJobName=job_name)
        reading = rule_reading.read_rule_statuses(handler_support.client("s3", region), state, job_name, described)
    except (ClientError, BotoCoreError) as error:
        if not handler_support.is_transient(error):
            raise
        return _wait_out_a_failed_read(state, job_name, error)
    if state.history.consecutive_read_failures:
        state = state.updated(history=state.history.model_copy(update={"consecutive_read_failures": 0}))
    decision = monitoring.decide(
        described,
        reading.statuses,
        state,
        rule_reading.metrics_saved_by_script(reading.document),
        rules_reported=bool(reading.statuses) or reading.foreign_job is not None,
        foreign_job=reading.foreign_job,
    )
    logger.info(
        "monitor decision",
        extra={
            "next_step": decision.next_step,
            "outcome": decision.outcome,
            "reason": decision.reason,
            "training_job_status": described.get("TrainingJobStatus"),
            "secondary_status": described.get("SecondaryStatus"),
            "rule_statuses": {rule.RuleConfigurationName: rule.RuleEvaluationStatus for rule in reading.statuses},
        },
    )
    if decision.stop_job:
        stopped = handler_support.stop_training_job(sagemaker, job_name)
        logger.info("stop requested" if stopped else "job was no longer stoppable")
    if decision.outcome == "issues_found":
        metrics.add_metric(name="IssuesFound", unit=MetricUnit.Count, value=len(decision.issues))
    updated = monitoring.apply_decision(state, decision, described, reading)
    if decision.next_step == "completed":
        metrics.add_metric(name="JobsCompleted", unit=MetricUnit.Count, value=1)
        handler_support.publish_best_effort(notifications.completed(updated), metrics, logger)
    return {**updated.to_payload(), "next_step": decision.next_step}


#: Polls in a row whose reads may fail transiently before the monitor gives up (at 60 s a poll: ~20 minutes,
#: on top of the client's own retries within each poll).
MAX_CONSECUTIVE_READ_FAILURES = 20


def _wait_out_a_failed_read(state: WorkflowState, job_name: str, error: BaseException) -> dict[str, Any]:
    """A throttled or transient read says nothing about the job: wait for the next poll, never act on it."""
    failures = state.history.consecutive_read_failures + 1
    if failures > MAX_CONSECUTIVE_READ_FAILURES:
        raise handler_support.AwsTransientError(
            f"reading job {job_name} failed transiently {failures} polls in a row; last: {error}"
        ) from error
    logger.warning("transient AWS error while reading the job; waiting for the next poll", extra={"error": str(error)})
    metrics.add_metric(name="TransientReadFailures", unit=MetricUnit.Count, value=1)
    waited = state.updated(history=state.history.model_copy(update={"consecutive_read_failures": failures}))
    return {**waited.to_payload(), "next_step": "wait"}


def clean_up(failed_input: dict[str, Any], execution_id: str, execution_start_time: str) -> dict[str, Any]:
    """Stop whatever job the failed execution may have left running (only a job whose tags prove it is this
    execution's), notify, and return Error/Cause."""
    error = failed_input.get("error") or {}
    error_name = str(error.get("Error") or "WorkflowError")
    cause = str(error.get("Cause") or "")
    lambda_message = notifications.lambda_error(cause).get("errorMessage")
    message = (lambda_message if isinstance(lambda_message, str) else "") or cause or error_name
    state = _state_or_none(failed_input.get("state"))

    report = execution_cleanup.CleanupReport()
    if state is not None:
        execution_cleanup.stop_owned_jobs(
            handler_support.client("sagemaker", state.run_spec.region),
            execution_cleanup.jobs_that_may_run(state, execution_id, execution_start_time),
            execution_id,
            execution_start_time,
            report,
        )
    if not report.notes:
        report.notes.append("no training job of this execution could still be running: nothing to stop")
    if report.stopped:
        metrics.add_metric(name="JobsStoppedOnError", unit=MetricUnit.Count, value=len(report.stopped))
    # An unexpected end is counted for the alarm by the execution-cleanup Lambda, which every failed execution
    # reaches (this path or not): counted once, whatever state the execution failed in.
    logger.error("workflow failed", extra={"error": error_name, "cause": clip(message, 2000), "cleanup": report.notes})
    handler_support.publish(notifications.workflow_error(error_name, cause, state))
    cleanup_note = f" Cleanup: {'; '.join(report.notes)}."
    return {"Error": error_name, "Cause": clip(f"{message}{cleanup_note}", MAX_CAUSE_LENGTH)}


def _state_or_none(raw: Any) -> WorkflowState | None:
    if not isinstance(raw, dict):
        return None
    try:
        return parse_state({"state": raw})
    except InvalidExecutionInput as error:
        logger.warning("state in the failed input is not valid; nothing to clean up", extra={"problem": str(error)})
        return None
