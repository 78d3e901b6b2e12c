"""`remediate cloud stop`: stop an execution (StopExecution) and the training job it left running, only if the job's
tags prove it is that execution's (the execution-cleanup Lambda's own code: lambdas/remediation/execution_cleanup.py).

An execution that has already ended is not stopped again, but its job is still looked for: one that timed out or
was aborted before the stack's cleanup rule existed may have left one."""

from __future__ import annotations

import argparse

from lambdas.remediation import execution_cleanup
from remediate.aws_access import aws_call
from remediate.cloud_stack import outputs_for
from remediate.cloud_status import execution_arn_for

STOP_ERROR = "UserStop"


def stop_command(arguments: argparse.Namespace) -> int:
    session, outputs = outputs_for(arguments)
    execution_arn = execution_arn_for(arguments.execution, outputs.state_machine_arn)
    client = session.client("stepfunctions")
    description = aws_call("DescribeExecution", client.describe_execution, executionArn=execution_arn)
    if description["status"] == "RUNNING":
        aws_call(
            "StopExecution",
            client.stop_execution,
            executionArn=execution_arn,
            error=STOP_ERROR,
            cause=arguments.cause,
        )
        print(f"stopped {execution_arn}")
    else:
        print(f"{execution_arn} had already ended ({description['status']}); looking for a job it left")
    report = aws_call(
        "StopTrainingJob",
        execution_cleanup.stop_jobs_of_ended_execution,
        client,
        lambda region: session.client("sagemaker", region_name=region),
        execution_arn,
        description.get("startDate"),
    )
    for note in report.notes:
        print(f"  {note}")
    return 0
