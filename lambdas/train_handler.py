"""Train Lambda: launch the training job for the state's run_spec and record the attempt.

The job name is deterministic per execution (its ARN and start time) and
attempt, so a retried task never launches a second job: ResourceInUse for our
own name means "already launched", and the handler adopts that job only if its
tags prove this execution launched it.

Step Functions does not stop a Lambda when its execution is stopped or times out: a launch under way goes on. So
once the job exists the handler asks whether its execution still runs, and stops its own job if not (the
execution-cleanup Lambda, which may have looked before the job existed, looks again after this Lambda's timeout).
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from contracts.stack_guardrails import CostGuardrails
from lambdas.remediation import handler_support
from lambdas.remediation.job import checkpoint_resume, job_identity, job_request, launch_guard
from lambdas.remediation.state.payload import parse_state
from lambdas.remediation.text import notifications

logger = Logger(service=handler_support.SERVICE_NAME)
metrics = Metrics(namespace=handler_support.METRICS_NAMESPACE, service=handler_support.SERVICE_NAME)
tracer = Tracer(service=handler_support.SERVICE_NAME)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@handler_support.counting_errors(metrics)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    handler_support.begin_invocation(context)
    task = handler_support.parse_task_event(event)
    state = parse_state({"state": task.state})
    attempt_number = state.attempt_count + 1
    identity = job_identity.execution_identity(task.execution_id, task.execution_start_time)
    job_name = job_identity.training_job_name(identity, state.run_spec.base_job_name, attempt_number)
    logger.append_keys(execution_name=task.execution_name, job_name=job_name, attempt=attempt_number)
    guardrails = CostGuardrails.from_environment(os.environ)
    # Checked before anything is copied or launched: a bad request must not leave half a resume behind.
    job_request.build_create_training_job_request(
        state,
        job_name,
        execution_id=task.execution_id,
        execution_start_time=task.execution_start_time,
        guardrails=guardrails,
    )
    region = state.run_spec.region
    sagemaker = handler_support.client("sagemaker", region)
    with handler_support.transient_errors_retried("launching " + job_name):
        adopted = own_job(sagemaker, job_name, task.execution_id, task.execution_start_time)
        if adopted is not None:
            # An earlier try of this task launched it (and carried the checkpoints over, or not: its tags say).
            resumed, request = checkpoint_resume_from_tags(adopted), None
            reserved = adopted["ResourceConfig"]["InstanceCount"] * adopted["StoppingCondition"]["MaxRuntimeInSeconds"]
        else:
            resumed = resume_checkpoints(state, job_name)
            request = job_request.build_create_training_job_request(
                state,
                job_name,
                execution_id=task.execution_id,
                execution_start_time=task.execution_start_time,
                tags=job_identity.resume_tags(resumed),
                guardrails=guardrails,
            )
            launch(sagemaker, request, task.execution_id, task.execution_start_time)
            reserved = request["ResourceConfig"]["InstanceCount"] * request["StoppingCondition"]["MaxRuntimeInSeconds"]
            metrics.add_metric(name="JobsLaunched", unit=MetricUnit.Count, value=1)
    if launch_guard.stop_if_execution_ended(
        handler_support.client("stepfunctions", region), sagemaker, task.execution_id, job_name, logger
    ):
        metrics.add_metric(name="JobsStoppedAfterExecutionEnded", unit=MetricUnit.Count, value=1)

    launched = state.with_new_attempt(
        job_name,
        resumed_from=resumed.from_job if resumed.copied else None,
        resumed_checkpoint_files=resumed.copied.files if resumed.copied else None,
        resume_skipped=resumed.skipped,
        reserved_instance_seconds=reserved,
    )
    handler_support.publish_best_effort(notifications.job_launched(launched), metrics, logger)
    logger.info("training job launched", extra={"run_spec": launched.run_spec.summary()})
    return launched.to_payload()


def own_job(sagemaker: Any, job_name: str, execution_id: str, execution_start_time: str) -> dict[str, Any] | None:
    """The job already under this attempt's name (DescribeTrainingJob), if this execution launched it; None if there
    is none. JobNameTaken when another execution's job holds the name."""
    try:
        existing = sagemaker.describe_training_job(TrainingJobName=job_name)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in handler_support.NO_SUCH_JOB_OR_NOT_STOPPABLE:
            return None
        raise
    tags = handler_support.job_tags(sagemaker, existing["TrainingJobArn"])
    if not job_identity.owned_by(tags, execution_id, execution_start_time):
        raise JobNameTaken(
            f"training job {job_name} exists ({existing.get('TrainingJobStatus')}) but its tags do not name this "
            f"execution ({execution_id} started {execution_start_time}); not adopting another execution's job"
        )
    logger.warning(
        "training job already launched by an earlier try of this execution; not launching another",
        extra={"training_job_status": existing.get("TrainingJobStatus")},
    )
    return {**existing, "Tags": tags}


def checkpoint_resume_from_tags(job: dict[str, Any]) -> checkpoint_resume.Resumed:
    return job_identity.resumed_from_tags(job["Tags"])


@tracer.capture_method(capture_response=False)
def resume_checkpoints(state: Any, job_name: str) -> checkpoint_resume.Resumed:
    """When the last decision resumes, carry its job's checkpoints over to this one before it launches; when they
    cannot be carried (too many, too large, too slow to copy in time) the job starts from step 0, said so."""
    last = state.last_attempt
    resume_from = last.decision.resume_from if last is not None and last.decision is not None else None
    if resume_from is None:
        return checkpoint_resume.Resumed()
    region = state.run_spec.region
    resumed = checkpoint_resume.resume_or_start_over(
        handler_support.client("s3", region),
        handler_support.client("s3", region, read_timeout=checkpoint_resume.COPY_READ_SECONDS),
        state.run_spec.bucket,
        resume_from,
        job_name,
        seconds_left=handler_support.seconds_left,
        # the jobs' own prefixes, under this execution's secret (the last job is this execution's too)
        source_prefix=job_identity.evidence_prefixes(resume_from, state.evidence_key).checkpoints,
        target_prefix=job_identity.evidence_prefixes(job_name, state.evidence_key).checkpoints,
    )
    if resumed.copied is not None:
        logger.info(
            "checkpoints carried over",
            extra={"from_job": resume_from, "files": resumed.copied.files, "bytes": resumed.copied.bytes},
        )
    else:
        logger.warning("checkpoints not carried over: starting from step 0", extra={"why": resumed.skipped})
    return resumed


class JobNameTaken(RuntimeError):
    """A training job with this execution's job name exists but another execution launched it."""


class TrainingCapacityUnavailable(handler_support.RetriedLater):
    """SageMaker refused the launch for a shortage that passes (the account's instance quota in use by other jobs:
    ResourceLimitExceeded): the state machine retries the task after a delay (statemachine/remediation.asl.json)."""


@tracer.capture_method(capture_response=False)
def launch(sagemaker: Any, request: dict[str, Any], execution_id: str, execution_start_time: str) -> None:
    job_name = request["TrainingJobName"]
    try:
        sagemaker.create_training_job(**request)
    except (ClientError, BotoCoreError) as error:
        if handler_support.is_transient(error):
            # Safe to retry: the name is this execution's, so a job created before the fault is found and adopted.
            raise handler_support.AwsTransientError(f"CreateTrainingJob {job_name}: {error}") from error
        code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else ""
        if code == "ResourceLimitExceeded":
            raise TrainingCapacityUnavailable(
                f"CreateTrainingJob {job_name}: {error.response.get('Error', {}).get('Message', error)} "
                f"({request['ResourceConfig']['InstanceCount']} x {request['ResourceConfig']['InstanceType']})"
            ) from None
        if code != "ResourceInUse":
            raise
        existing = sagemaker.describe_training_job(TrainingJobName=job_name)
        tags = handler_support.job_tags(sagemaker, existing["TrainingJobArn"])
        if not job_identity.owned_by(tags, execution_id, execution_start_time):
            raise JobNameTaken(
                f"training job {job_name} exists ({existing.get('TrainingJobStatus')}) but its tags do not name this "
                f"execution ({execution_id} started {execution_start_time}); not adopting another execution's job"
            ) from None
        # Its tags prove it: an earlier try of this very task launched it.
        logger.warning(
            "training job already launched by an earlier try of this execution; not launching another",
            extra={"training_job_status": existing.get("TrainingJobStatus")},
        )
