"""A launch that outlived its execution: the train Lambda's look, once its job exists, at whether the execution
still runs.

Step Functions does not stop a Lambda when the execution that invoked it is stopped or times out. A train Lambda
still copying checkpoints or calling CreateTrainingJob then creates a job nobody watches, and the execution-cleanup
Lambda, triggered by the execution's end, may have looked before the job existed. So the train Lambda asks
(DescribeExecution) once its job exists and stops that job itself if the execution no longer runs. A read or stop
that fails is tried again (TRIES in all, pauses of PAUSES_SECONDS): a fault or two in a row does not leave the job to
the cleanup alone. If it still cannot ask or stop, the cleanup's second look, after this Lambda's timeout, finds the
job.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.remediation import handler_support

#: Tries of each call, and the pauses between them (inside the train Lambda's launch reserve).
TRIES = 3
PAUSES_SECONDS = (0.5, 1.0)
#: How the guard pauses between tries (tests replace it).
pause = time.sleep
Answer = TypeVar("Answer")


def _tried(call: Callable[[], Answer]) -> Answer:
    """``call()``, tried again after a failure while tries are left (the last failure is raised)."""
    for attempt in range(TRIES):
        try:
            return call()
        except (ClientError, BotoCoreError, handler_support.AwsTransientError) as error:
            code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else ""
            transient = isinstance(error, handler_support.AwsTransientError) or handler_support.is_transient(error)
            if attempt == TRIES - 1 or not transient or code in handler_support.NO_SUCH_JOB_OR_NOT_STOPPABLE:
                raise
            pause(PAUSES_SECONDS[min(attempt, len(PAUSES_SECONDS) - 1)])
    raise AssertionError("unreachable")  # pragma: no cover


def stop_if_execution_ended(stepfunctions: Any, sagemaker: Any, execution_arn: str, job_name: str, logger: Any) -> bool:
    """Stop ``job_name`` (this execution's own, just created or adopted) if ``execution_arn`` no longer runs;
    True when it was stopped."""
    try:
        status = _tried(lambda: stepfunctions.describe_execution(executionArn=execution_arn))["status"]
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
        stopped = _tried(lambda: handler_support.stop_training_job(sagemaker, job_name))
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
