"""Job-events Lambda: the two ends of the event-driven wait (``lambdas.remediation.job.job_events``).

* The WaitForJob task (``action: "wait_for_job"``, a ``.waitForTaskToken`` task)
  keeps its task token under the job's name and returns; the task stays open.
  A job that has already reached a final status (its event may have come before
  the token was kept) is answered at once.
* The EventBridge rule's "SageMaker Training Job State Change" event of one of our
  jobs reaching a final status reads the token back and completes the wait
  (SendTaskSuccess), so the monitor runs as soon as the job ends, however long it
  trained, instead of at the next poll.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from lambdas.remediation import handler_support
from lambdas.remediation.job import job_events
from lambdas.remediation.state.payload import parse_state
from lambdas.remediation.state.validation_messages import InvalidExecutionInput

logger = Logger(service=handler_support.SERVICE_NAME)
metrics = Metrics(namespace=handler_support.METRICS_NAMESPACE, service=handler_support.SERVICE_NAME)
tracer = Tracer(service=handler_support.SERVICE_NAME)

#: The artifacts bucket where the tokens are kept (the stack's; both ends read the same place).
ARTIFACTS_BUCKET_ENV = "ARTIFACTS_BUCKET"


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@handler_support.counting_errors(metrics)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    handler_support.begin_invocation(context)
    try:
        if isinstance(event, dict) and event.get("detail-type") == job_events.TRAINING_JOB_STATE_CHANGE:
            return job_state_changed(event)
        return wait_for_job(event)
    except (ClientError, BotoCoreError) as error:
        if handler_support.is_transient(error):
            # EventBridge retries a failed asynchronous invocation; the state machine retries the wait task.
            raise handler_support.AwsTransientError(str(error)) from error
        raise


def wait_for_job(event: dict[str, Any]) -> dict[str, Any]:
    task = handler_support.parse_task_event(event)
    if task.action != "wait_for_job" or not task.task_token:
        raise InvalidExecutionInput(
            {"action": "the job-events Lambda takes the WaitForJob task ({action: wait_for_job, task_token, state}) "
             f"or a {job_events.TRAINING_JOB_STATE_CHANGE} event"}
        )
    state = parse_state({"state": task.state})
    job_name = state.history.latest_job_name
    if not job_name:
        raise InvalidExecutionInput({"state.history.latest_job_name": "is empty; the train step launches a job first"})
    logger.append_keys(execution_name=task.execution_name, job_name=job_name)
    region = state.run_spec.region
    job_events.keep_task_token(
        handler_support.client("s3", region),
        artifacts_bucket(),
        job_name,
        task.task_token,
        task.execution_id,
        task.execution_start_time,
    )
    # Kept first, read second: an event that came before the token was kept found nothing to wake, so a job that
    # has already ended is answered here; one that ends from now on finds the token.
    status = handler_support.client("sagemaker", region).describe_training_job(TrainingJobName=job_name)[
        "TrainingJobStatus"
    ]
    if status in job_events.FINAL_TRAINING_JOB_STATUSES:
        woken = job_events.wake(
            handler_support.client("stepfunctions", region),
            task.task_token,
            {"woken_by": "job_already_ended", "job_name": job_name, "TrainingJobStatus": status},
        )
        logger.info("job had already ended: wait answered at once", extra={"status": status, "woken": woken})
        return {"job_name": job_name, "waiting": False, "TrainingJobStatus": status}
    logger.info("waiting for the job's state change", extra={"status": status})
    return {"job_name": job_name, "waiting": True, "TrainingJobStatus": status}


def job_state_changed(event: dict[str, Any]) -> dict[str, Any]:
    detail = event.get("detail") or {}
    job_name, status = detail.get("TrainingJobName", ""), detail.get("TrainingJobStatus", "")
    logger.append_keys(job_name=job_name)
    region = event.get("region") or os.environ.get("AWS_REGION", "")
    record = job_events.read_task_token(handler_support.client("s3", region), artifacts_bucket(), job_name)
    if record is None:
        logger.info("no execution waits for this job", extra={"status": status})
        return {"job_name": job_name, "woken": False}
    woken = job_events.wake(
        handler_support.client("stepfunctions", region),
        record["task_token"],
        {"woken_by": "job_state_change", "job_name": job_name, "TrainingJobStatus": status},
    )
    if woken:
        metrics.add_metric(name="WaitsWokenByEvents", unit=MetricUnit.Count, value=1)
    logger.info(
        "job state change delivered" if woken else "the wait for this job had already ended",
        extra={"status": status, "execution_id": record.get("execution_id")},
    )
    return {"job_name": job_name, "woken": woken}


def artifacts_bucket() -> str:
    return handler_support.environment_value(
        ARTIFACTS_BUCKET_ENV, "the job-events Lambda keeps task tokens in this artifacts bucket"
    )
