"""The deployed stack as `remediate cloud` sees it: its outputs (CloudFormation DescribeStacks)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from infra.outputs import (
    OUTPUT_BUCKET_NAME,
    OUTPUT_JOB_NAME_PREFIX,
    OUTPUT_SAGEMAKER_ROLE_ARN,
    OUTPUT_STATE_MACHINE_ARN,
    OUTPUT_TOPIC_ARN,
)
from remediate.aws_access import CloudCommandError, aws_call, aws_session

STACK_NAME_ENV = "REMEDIATION_STACK_NAME"
REQUIRED_OUTPUTS = (OUTPUT_STATE_MACHINE_ARN, OUTPUT_BUCKET_NAME, OUTPUT_SAGEMAKER_ROLE_ARN)


@dataclass(frozen=True)
class StackOutputs:
    stack_name: str
    region: str
    state_machine_arn: str
    bucket: str
    sagemaker_role_arn: str
    topic_arn: str | None
    job_name_prefix: str | None


def read_stack_outputs(stack_name: str, session) -> StackOutputs:
    """The stack's outputs; CloudCommandError naming the stack or the missing output and the fix."""
    from botocore.exceptions import ClientError

    client = session.client("cloudformation")
    try:
        stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as error:
        message = error.response.get("Error", {}).get("Message", "")
        if "does not exist" in message:
            raise CloudCommandError(
                f"stack '{stack_name}' not found in {session.region_name}: deploy it with `npx cdk deploy` "
                f"or pass --stack-name / --region (or set {STACK_NAME_ENV})"
            ) from None
        raise
    if not stacks:
        raise CloudCommandError(f"stack '{stack_name}' not found in {session.region_name}")
    stack = stacks[0]
    outputs = {item["OutputKey"]: item["OutputValue"] for item in stack.get("Outputs", [])}
    missing = [key for key in REQUIRED_OUTPUTS if not outputs.get(key)]
    if missing:
        status = stack.get("StackStatus", "unknown")
        raise CloudCommandError(
            f"stack '{stack_name}' (status {status}) has no output {', '.join(missing)}: it is not this project's "
            "stack or not fully deployed; run `npx cdk deploy` and retry"
        )
    return StackOutputs(
        stack_name=stack_name,
        region=session.region_name,
        state_machine_arn=outputs[OUTPUT_STATE_MACHINE_ARN],
        bucket=outputs[OUTPUT_BUCKET_NAME],
        sagemaker_role_arn=outputs[OUTPUT_SAGEMAKER_ROLE_ARN],
        topic_arn=outputs.get(OUTPUT_TOPIC_ARN),
        job_name_prefix=outputs.get(OUTPUT_JOB_NAME_PREFIX),
    )


def outputs_for(arguments: argparse.Namespace) -> tuple[Any, StackOutputs]:
    """A session in the command's region and the stack's outputs (--stack-name, --region)."""
    session = aws_session(arguments.region)
    outputs = aws_call("DescribeStacks", read_stack_outputs, arguments.stack_name, session)
    return session, outputs
