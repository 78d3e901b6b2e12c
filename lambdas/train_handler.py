"""Train Lambda: launch the training job for the state's run_spec and record the attempt.

The job name is deterministic per execution (its ARN and start time) and
attempt, so a retried task never launches a second job: ResourceInUse for our
own name means "already launched", and the handler adopts that job only if its
tags prove this execution launched it.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from lambdas.remediation import checkpoint_resume, handler_support, job_request, notifications
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
    identity = job_request.execution_identity(task.execution_id, task.execution_start_time)
    job_name = job_request.training_job_name(identity, state.run_spec.base_job_name, attempt_number)
    logger.append_keys(execution_name=task.execution_name, job_name=job_name, attempt=attempt_number)

    request = job_request.build_create_training_job_request(
        state, job_name, execution_id=task.execution_id, execution_start_time=task.execution_start_time
    )
    resumed = resume_checkpoints(state, job_name)
    sagemaker = handler_support.client("sagemaker", state.run_spec.region)
    launch(sagemaker, request, task.execution_id, task.execution_start_time)
    metrics.add_metric(name="JobsLaunched", unit=MetricUnit.Count, value=1)

    launched = state.with_new_attempt(
        job_name,
        resumed_from=resumed.from_job if resumed else None,
        resumed_checkpoint_files=resumed.files if resumed else None,
    )
    handler_support.publish(notifications.job_launched(launched))
    logger.info("training job launched", extra={"run_spec": launched.run_spec.summary()})
    return launched.to_payload()


@tracer.capture_method
def resume_checkpoints(state: Any, job_name: str) -> checkpoint_resume.CopiedCheckpoints | None:
    """When the last decision resumes, carry its job's checkpoints over to this one before it launches."""
    last = state.last_attempt
    resume_from = last.decision.resume_from if last is not None and last.decision is not None else None
    if resume_from is None:
        return None
    s3 = handler_support.client("s3", state.run_spec.region)
    try:
        copied = checkpoint_resume.copy_checkpoints(s3, state.run_spec.bucket, resume_from, job_name)
    except (ClientError, BotoCoreError) as error:
        if handler_support.is_transient(error):
            raise handler_support.AwsTransientError(f"copying {resume_from}'s checkpoints: {error}") from error
        raise
    logger.info(
        "checkpoints carried over", extra={"from_job": resume_from, "files": copied.files, "bytes": copied.bytes}
    )
    return copied


class JobNameTaken(RuntimeError):
    """A training job with this execution's job name exists but another execution launched it."""


@tracer.capture_method
def launch(sagemaker: Any, request: dict[str, Any], execution_id: str, execution_start_time: str) -> None:
    job_name = request["TrainingJobName"]
    try:
        sagemaker.create_training_job(**request)
    except (ClientError, BotoCoreError) as error:
        if handler_support.is_transient(error):
            # Safe to retry: the name is this execution's, so a job created before the fault is found and adopted.
            raise handler_support.AwsTransientError(f"CreateTrainingJob {job_name}: {error}") from error
        if not isinstance(error, ClientError) or error.response.get("Error", {}).get("Code") != "ResourceInUse":
            raise
        existing = sagemaker.describe_training_job(TrainingJobName=job_name)
        tags = handler_support.job_tags(sagemaker, existing["TrainingJobArn"])
        if not job_request.owned_by(tags, execution_id, execution_start_time):
            raise JobNameTaken(
                f"training job {job_name} exists ({existing.get('TrainingJobStatus')}) but its tags do not name this "
                f"execution ({execution_id} started {execution_start_time}); not adopting another execution's job"
            ) from None
        # Its tags prove it: an earlier try of this very task launched it.
        logger.warning(
            "training job already launched by an earlier try of this execution; not launching another",
            extra={"training_job_status": existing.get("TrainingJobStatus")},
        )
