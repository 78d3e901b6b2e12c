"""Execution-cleanup Lambda: the target of the EventBridge rule on this state machine's "Step Functions Execution
Status Change" to TIMED_OUT, ABORTED or FAILED.

An execution that times out or is aborted runs no Catch, so its HandleFailure never stops the job it launched;
one that fails outside a Catch neither. This reads the execution's last state from its history, finds the job it
launched (or was launching) and stops it, only if the job's tags prove it is that execution's; when the execution
ended while launching, it looks again once the train Lambda's timeout has passed.

Every such end passes here, whatever state it happened in, so here it is judged (``end_causes.judge_end``): one the
workflow did not notify itself (timed out, stopped, failed outside its own ending) is notified, with its Error, its
Cause, the state it was in and what the cleanup found (nothing included); one that is not an expected end or a
deliberate stop (`remediate cloud stop`, the stack's delete) is counted for the WorkflowErrors alarm.

It is the last line of defence, so it persists: a transient failure is tried again within the invocation, with
backoff, up to CLEANUP_TRIES times; one that outlasts them is raised (Lambda retries the asynchronous invocation
twice, then sends the event to the stack's dead-letter queue, which raises an alarm). Never silent.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from lambdas.remediation import handler_support
from lambdas.remediation.job import execution_cleanup, job_events
from lambdas.remediation.state import end_causes
from lambdas.remediation.state.validation_messages import InvalidExecutionInput, clip
from lambdas.remediation.text import notifications

logger = Logger(service=handler_support.SERVICE_NAME)
metrics = Metrics(namespace=handler_support.METRICS_NAMESPACE, service=handler_support.SERVICE_NAME)
tracer = Tracer(service=handler_support.SERVICE_NAME)

#: How the second look waits for a train Lambda that may still run (tests replace it: see tests/workflow).
settle_launch = execution_cleanup.wait_until
#: Tries within one invocation when an AWS call fails transiently, and the pause before each retry (doubling, at
#: most MAX_PAUSE_SECONDS): 8 tries take at most 2 minutes of pauses, inside the Lambda's timeout with the second look.
CLEANUP_TRIES = 8
FIRST_PAUSE_SECONDS = 2.0
MAX_PAUSE_SECONDS = 30.0
#: How the handler pauses between tries (tests replace it).
pause = time.sleep


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@handler_support.counting_errors(metrics)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    handler_support.begin_invocation(context)
    detail = event.get("detail") if isinstance(event, dict) else None
    if event.get("detail-type") != job_events.EXECUTION_STATUS_CHANGE or not isinstance(detail, dict):
        raise InvalidExecutionInput(
            {"detail-type": f"the execution-cleanup Lambda takes {job_events.EXECUTION_STATUS_CHANGE!r} events"}
        )
    execution_arn, status = detail.get("executionArn", ""), detail.get("status", "")
    logger.append_keys(execution_arn=execution_arn, status=status)
    if status not in job_events.ABNORMAL_EXECUTION_STATUSES:
        return {"execution_arn": execution_arn, "status": status, "notes": ["nothing to clean up"], "stopped": []}
    region = execution_arn.split(":")[3]
    report = _clean_up_persistently(execution_arn, region, detail)
    if report.stopped:
        metrics.add_metric(name="JobsStoppedAfterExecutionEnded", unit=MetricUnit.Count, value=len(report.stopped))
    verdict = end_causes.judge_end(status, report.end_error, report.end_cause, report.last_state)
    if verdict.alarm:
        metrics.add_metric(name=end_causes.UNEXPECTED_WORKFLOW_ERRORS, unit=MetricUnit.Count, value=1)
    logger.info(
        "execution ended; cleanup done",
        extra={"notes": report.notes, "error": verdict.error, "alarmed": verdict.alarm, "last_state": report.last_state},
    )
    if verdict.notify or report.stopped:
        cause = f"Execution {execution_arn} ended {status}: {verdict.reason}. Cleanup: {'; '.join(report.notes)}."
        handler_support.publish(notifications.workflow_error(verdict.error, clip(cause, MAX_CAUSE_LENGTH), report.state))
    return {
        "execution_arn": execution_arn,
        "status": status,
        "error": verdict.error,
        "notified": verdict.notify or bool(report.stopped),
        "alarmed": verdict.alarm,
        "notes": report.notes,
        "stopped": report.stopped,
    }


#: A notification's cause is clipped (the execution's own cause may be 32 KiB).
MAX_CAUSE_LENGTH = 4000


def _clean_up_persistently(execution_arn: str, region: str, detail: dict[str, Any]) -> execution_cleanup.CleanupReport:
    """Read the ended execution (its last state, Error and Cause) and stop what it left, trying again after a
    transient failure while the invocation has time (each try reads afresh: a job stopped by an earlier try is no
    longer InProgress)."""
    for attempt in range(1, CLEANUP_TRIES + 1):
        try:
            with handler_support.transient_errors_retried(f"cleaning up after {execution_arn}"):
                return execution_cleanup.stop_jobs_of_ended_execution(
                    handler_support.client("stepfunctions", region),
                    execution_cleanup.sagemaker_client,
                    execution_arn,
                    detail.get("startDate"),
                    stop_date=detail.get("stopDate"),
                    settle=settle_launch,
                )
        except handler_support.AwsTransientError as error:
            delay = min(MAX_PAUSE_SECONDS, FIRST_PAUSE_SECONDS * 2 ** (attempt - 1))
            left = handler_support.seconds_left()
            if attempt == CLEANUP_TRIES or (left is not None and left < delay + 30):
                raise
            logger.warning("cleanup failed transiently; trying again", extra={"attempt": attempt, "error": str(error)})
            pause(delay)
    raise AssertionError("unreachable")  # pragma: no cover
