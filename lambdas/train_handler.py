"""Train Lambda: launch the training job for the state's run_spec and record the attempt.

The job name is deterministic per execution and attempt, so a retried task
never launches a second job: ResourceInUse for our own name means "already
launched" and the handler records it as such.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import ClientError

from lambdas.remediation import handler_support, job_request, notifications
from lambdas.remediation.payload import parse_state

logger = Logger(service=handler_support.SERVICE_NAME)
metrics = Metrics(namespace=handler_support.METRICS_NAMESPACE, service=handler_support.SERVICE_NAME)
tracer = Tracer(service=handler_support.SERVICE_NAME)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    task = handler_support.parse_task_event(event)
    state = parse_state({"state": task.state})
    attempt_number = state.attempt_count + 1
    job_name = job_request.training_job_name(task.execution_name, state.run_spec.base_job_name, attempt_number)
    logger.append_keys(execution_name=task.execution_name, job_name=job_name, attempt=attempt_number)

    request = job_request.build_create_training_job_request(state, job_name, execution_name=task.execution_name)
    sagemaker = handler_support.client("sagemaker", state.run_spec.region)
    launch(sagemaker, request)
    metrics.add_metric(name="JobsLaunched", unit=MetricUnit.Count, value=1)

    launched = state.with_new_attempt(job_name)
    handler_support.publish(notifications.job_launched(launched))
    logger.info("training job launched", extra={"run_spec": launched.run_spec.summary()})
    return launched.to_payload()


@tracer.capture_method
def launch(sagemaker: Any, request: dict[str, Any]) -> None:
    job_name = request["TrainingJobName"]
    try:
        sagemaker.create_training_job(**request)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceInUse":
            raise
        # Our name is unique to this execution and attempt: the job is the one an earlier try launched.
        existing = sagemaker.describe_training_job(TrainingJobName=job_name)
        logger.warning(
            "training job already launched by an earlier try; not launching another",
            extra={"training_job_status": existing.get("TrainingJobStatus")},
        )
