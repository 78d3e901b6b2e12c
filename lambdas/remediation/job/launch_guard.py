"""A launch that outlived its execution: the train Lambda's look, once its job exists, at whether the execution
still runs.

Step Functions does not stop a Lambda when the execution that invoked it is stopped or times out. A train Lambda
still copying checkpoints or calling CreateTrainingJob then creates a job nobody watches, and the execution-cleanup
Lambda, triggered by the execution's end, may have looked before the job existed. So the train Lambda asks
(DescribeExecution) once its job exists and stops that job itself if the execution no longer runs. If it cannot
ask (a throttled read), the cleanup's second look, after this Lambda's timeout, finds the job.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.remediation import handler_support


def stop_if_execution_ended(stepfunctions: Any, sagemaker: Any, execution_arn: str, job_name: str, logger: Any) -> bool:
    """Stop ``job_name`` (this execution's own, just created or adopted) if ``execution_arn`` no longer runs;
    True when it was stopped."""
    try:
        status = stepfunctions.describe_execution(executionArn=execution_arn)["status"]
    except (ClientError, BotoCoreError, handler_support.AwsTransientError) as error:
        logger.warning(
            "could not check that the execution still runs; the execution-cleanup Lambda looks again after this "
            "Lambda's timeout if it ended",
            extra={"error": str(error)},
        )
        return False
    if status == "RUNNING":
        return False
    try:
        stopped = handler_support.stop_training_job(sagemaker, job_name)
    except (ClientError, BotoCoreError, handler_support.AwsTransientError) as error:
        logger.error(
            "the execution ended while its job was launched and the job could not be stopped; the execution-cleanup "
            "Lambda looks again after this Lambda's timeout",
            extra={"execution_status": status, "error": str(error)},
        )
        return False
    logger.warning(
        "the execution ended while its job was launched: stopped the job",
        extra={"execution_status": status, "stop_requested": stopped},
    )
    return stopped
