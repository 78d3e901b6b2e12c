"""`remediate cloud stop`: stop an execution (StopExecution) and the training job it left running, only if the job's
tags prove it is that execution's (the execution-cleanup Lambda's own code: lambdas/remediation/job/execution_cleanup.py).

An execution that has already ended is not stopped again, but its job is still looked for: one that timed out or
was aborted before the stack's cleanup rule existed may have left one.

An execution stopped while its Train task ran may still have a train Lambda running (Step Functions does not stop a
Lambda it invoked): when the job it was launching is not there yet, the command waits until that Lambda's timeout
has passed and looks again, as the execution-cleanup Lambda does."""

from __future__ import annotations

import argparse
import datetime as dt

from contracts import time_budgets
from lambdas.remediation import handler_support
from lambdas.remediation.job import execution_cleanup
from lambdas.remediation.state import end_causes
from remediate.aws_access import EXIT_AWS_ERROR, CloudCommandError, aws_call
from remediate.cloud_stack import outputs_for
from remediate.cloud_status import execution_arn_for

#: A deliberate stop: the execution-cleanup Lambda notifies it but does not alarm (end_causes.DELIBERATE_STOP_ERRORS).
STOP_ERROR = end_causes.USER_STOP
#: How the second look waits (tests replace it).
wait_until = execution_cleanup.wait_until


def settle_launch(until: float) -> None:
    """Say why the command waits, then wait until the train Lambda has certainly ended."""
    seconds = max(0, round(until - dt.datetime.now(dt.UTC).timestamp()))
    print(
        f"  the execution was launching a job that is not there yet; waiting {seconds} s (the train Lambda's "
        f"timeout, {time_budgets.TRAIN_TIMEOUT_SECONDS} s, and a margin) before looking again"
    )
    wait_until(until)


def stop_command(arguments: argparse.Namespace) -> int:
    session, outputs = outputs_for(arguments)
    execution_arn = execution_arn_for(arguments.execution, outputs.state_machine_arn)
    client = session.client("stepfunctions")
    description = aws_call("DescribeExecution", client.describe_execution, executionArn=execution_arn)
    stop_date = description.get("stopDate")
    if description["status"] == "RUNNING":
        stop_date = aws_call(
            "StopExecution",
            client.stop_execution,
            executionArn=execution_arn,
            error=STOP_ERROR,
            cause=arguments.cause,
        ).get("stopDate")  # AWS answers it; moto does not (then: now)
        print(f"stopped {execution_arn}")
    else:
        print(f"{execution_arn} had already ended ({description['status']}); looking for a job it left")
    try:
        report = aws_call(
            "StopTrainingJob",
            execution_cleanup.stop_jobs_of_ended_execution,
            client,
            lambda region: session.client("sagemaker", region_name=region),
            execution_arn,
            description.get("startDate"),
            stop_date=stop_date,
            settle=settle_launch,
        )
    except handler_support.AwsTransientError as error:
        raise CloudCommandError(f"StopTrainingJob: {error}; run the command again", EXIT_AWS_ERROR) from None
    for note in report.notes:
        print(f"  {note}")
    return 0
