"""``remediate cloud ...``: drive the deployed stack (upload the training source and data, start, follow).

    remediate cloud upload-source [--source-dir DIR --entry-point FILE] [--stack-name NAME]
    remediate cloud prepare-data (--synthetic [--train-samples N --test-samples M --seed S] | --cifar10-archive FILE)
    remediate cloud start [--run-spec FILE] [--source-dir DIR --entry-point FILE --hyperparameters ...] [--name NAME]
    remediate cloud status EXECUTION_ARN_OR_NAME [--json]

Every command finds the bucket, the state machine and the SageMaker role in the
stack's outputs (CloudFormation DescribeStacks). The run_spec file is the same
execution-input JSON that ``remediate local run --run-spec`` takes; bucket,
region and sm_role come from the stack and are validated with the same
ExecutionInput model before anything starts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.outputs import (
    DEFAULT_STACK_NAME,
    OUTPUT_BUCKET_NAME,
    OUTPUT_JOB_NAME_PREFIX,
    OUTPUT_SAGEMAKER_ROLE_ARN,
    OUTPUT_STATE_MACHINE_ARN,
    OUTPUT_TOPIC_ARN,
)
from remediate.aws_access import CloudCommandError, aws_call, aws_session
from remediate.cloud_uploads import (
    check_local_source,
    prepare_example_channels,
    stage_locally,
    upload_example_channels,
    upload_file,
    upload_source,
)
from remediate.execution_history import current_state_name, latest_state_payload
from remediate.run_inputs import add_script_options, apply_script_options
from remediate.run_spec import RunSpecError, check_execution_input, read_run_spec

STACK_NAME_ENV = "REMEDIATION_STACK_NAME"
REQUIRED_OUTPUTS = (OUTPUT_STATE_MACHINE_ARN, OUTPUT_BUCKET_NAME, OUTPUT_SAGEMAKER_ROLE_ARN)

EXECUTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
@dataclass(frozen=True)
class StackOutputs:
    stack_name: str
    region: str
    state_machine_arn: str
    bucket: str
    sagemaker_role_arn: str
    topic_arn: str | None
    job_name_prefix: str | None


# --------------------------------------------------------------------------- the stack


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


# --------------------------------------------------------------------------- execution input


def load_run_spec(path: Path) -> dict[str, Any]:
    try:
        return read_run_spec(path)
    except RunSpecError as error:
        raise CloudCommandError(str(error)) from None


def _validate_execution_input(execution_input: Mapping[str, Any]) -> None:
    """The check the workflow's first step applies (as the local runtime does), as a CloudCommandError."""
    try:
        check_execution_input(execution_input)
    except RunSpecError as error:
        raise CloudCommandError(str(error)) from None


def build_execution_input(run_spec: Mapping[str, Any], outputs: StackOutputs) -> dict[str, Any]:
    """run_spec plus bucket, region and sm_role from the stack, validated as the local runtime validates it."""
    stack_values = {"bucket": outputs.bucket, "region": outputs.region, "sm_role": outputs.sagemaker_role_arn}
    conflicts = {
        key: f"the run_spec says {run_spec[key]!r} but stack '{outputs.stack_name}' uses {value!r}; "
        f"remove '{key}' from the run_spec"
        for key, value in stack_values.items()
        if key in run_spec and run_spec[key] != value
    }
    if conflicts:
        raise CloudCommandError("invalid run_spec: " + "; ".join(f"{k}: {v}" for k, v in conflicts.items()))
    execution_input = {**dict(run_spec), **stack_values}
    _validate_execution_input(execution_input)
    return execution_input


#: Valid stand-ins for the stack's values, so a run_spec's own fields are checked before any AWS call.
_PRECHECK_STACK_VALUES = {
    "bucket": "precheck-bucket",
    "region": "us-east-1",
    "sm_role": "arn:aws:iam::123456789012:role/precheck",
}


def precheck_run_spec(run_spec: Mapping[str, Any]) -> None:
    """Validate the run_spec's own fields offline (the stack's values are checked once they are known)."""
    _validate_execution_input({**_PRECHECK_STACK_VALUES, **dict(run_spec)})


def default_execution_name() -> str:
    return f"remediation-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def start_execution(session, outputs: StackOutputs, execution_input: Mapping[str, Any], name: str | None) -> dict:
    """name: already checked against EXECUTION_NAME (by _start_command), or None for a fresh default name."""
    client = session.client("stepfunctions")
    return aws_call(
        "StartExecution",
        client.start_execution,
        stateMachineArn=outputs.state_machine_arn,
        name=name or default_execution_name(),
        input=json.dumps(dict(execution_input)),
    )


# --------------------------------------------------------------------------- status


def execution_arn_for(name_or_arn: str, state_machine_arn: str) -> str:
    if name_or_arn.startswith("arn:"):
        return name_or_arn
    if not EXECUTION_NAME.fullmatch(name_or_arn):
        raise CloudCommandError(f"EXECUTION_ARN_OR_NAME: {name_or_arn!r} is neither an execution ARN nor a valid name")
    head, _, machine = state_machine_arn.rpartition(":")
    return f"{head.replace(':stateMachine', ':execution')}:{machine}:{name_or_arn}"


def summarize_execution(description: Mapping[str, Any], history: list[Mapping[str, Any]]) -> dict[str, Any]:
    payload = latest_state_payload(description, history)
    state = (payload or {}).get("state", {})
    current = current_state_name(history) or None
    attempts = []
    for attempt in state.get("attempts", []) or []:
        decision = attempt.get("decision") or {}
        issue = attempt.get("issue") or {}
        attempts.append(
            {
                "number": attempt.get("number"),
                "job_name": attempt.get("job_name"),
                "outcome": attempt.get("outcome"),
                "issue": f"{issue.get('rule')} at step {issue.get('step')}" if issue.get("rule") else None,
                "remedy": decision.get("remedy"),
                "reason": decision.get("reason"),
            }
        )
    summary = {
        "execution_arn": description.get("executionArn"),
        "status": description.get("status"),
        "start_date": _iso(description.get("startDate")),
        "stop_date": _iso(description.get("stopDate")),
        "current_state": current,
        "next_action": state.get("next_action"),
        "job_status": state.get("job_status"),
        "rule_status": state.get("rule_status"),
        "history": state.get("history"),
        "end_reason": state.get("end_reason"),
        "attempts": attempts,
        "run_spec": state.get("run_spec"),
    }
    if description.get("status") == "FAILED":
        summary["error"] = description.get("error")
        summary["cause"] = description.get("cause")
    return summary


def _iso(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else value


def execution_history(client, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for page in client.get_paginator("get_execution_history").paginate(executionArn=execution_arn):
        events += page["events"]
    return events


# --------------------------------------------------------------------------- command handlers


def _outputs_for(arguments: argparse.Namespace) -> tuple[Any, StackOutputs]:
    session = aws_session(arguments.region)
    outputs = aws_call("DescribeStacks", read_stack_outputs, arguments.stack_name, session)
    return session, outputs


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def _upload_source_command(arguments: argparse.Namespace) -> int:
    if (arguments.source_dir is None) != (arguments.entry_point is None):
        raise CloudCommandError("--source-dir and --entry-point go together: your directory and the script in it")
    if arguments.source_dir is not None:  # checked before any AWS call
        check_local_source(arguments.source_dir, arguments.entry_point)
    session, outputs = _outputs_for(arguments)
    uri = upload_source(session, outputs, arguments.source_dir, arguments.entry_point)
    print(f"uploaded the training source to {uri}")
    if arguments.source_dir is not None:
        print(f'use it in a run_spec: "source_dir": "{uri}", "entry_point": "{arguments.entry_point}"')
    return 0


def _prepare_data_command(arguments: argparse.Namespace) -> int:
    for name in ("train_samples", "test_samples"):
        if getattr(arguments, name) < 1:
            raise CloudCommandError(f"--{name.replace('_', '-')}: must be >= 1 (got {getattr(arguments, name)})")
    session, outputs = _outputs_for(arguments)
    with tempfile.TemporaryDirectory(prefix="remediate-data-") as scratch:
        channels = prepare_example_channels(arguments, Path(scratch))
        uris = upload_example_channels(session, outputs, channels)
    for uri in uris:
        print(f"uploaded {uri}")
    return 0


def _start_command(arguments: argparse.Namespace) -> int:
    run_spec = load_run_spec(arguments.run_spec) if arguments.run_spec else {}
    base_dir = Path(arguments.run_spec).resolve().parent if arguments.run_spec else Path.cwd()
    try:
        run_spec = apply_script_options(run_spec, arguments)
    except RunSpecError as error:
        raise CloudCommandError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="remediate-start-") as scratch:
        staged, _ = stage_locally(run_spec, Path(scratch), base_dir, _PRECHECK_STACK_VALUES["bucket"])
        precheck_run_spec(staged)
        if arguments.name is not None and not EXECUTION_NAME.fullmatch(arguments.name):
            raise CloudCommandError(f"--name: {arguments.name!r} must be 1-80 letters, digits, '-' or '_'")
        session, outputs = _outputs_for(arguments)
        staged, uploads = stage_locally(run_spec, Path(scratch), base_dir, outputs.bucket)
        execution_input = build_execution_input(staged, outputs)
        for item in uploads:
            upload_file(session, outputs.bucket, item.key, item.local_path)
    response = start_execution(session, outputs, execution_input, arguments.name)
    if arguments.json:
        _print_json({"executionArn": response["executionArn"], "input": execution_input})
    else:
        print(f"started {response['executionArn']}")
        print(f"follow it with: remediate cloud status {response['executionArn']}")
    return 0


def _status_command(arguments: argparse.Namespace) -> int:
    session, outputs = _outputs_for(arguments)
    execution_arn = execution_arn_for(arguments.execution, outputs.state_machine_arn)
    client = session.client("stepfunctions")
    description = aws_call("DescribeExecution", client.describe_execution, executionArn=execution_arn)
    history = aws_call("GetExecutionHistory", execution_history, client, execution_arn)
    summary = summarize_execution(description, history)
    if arguments.json:
        _print_json(summary)
        return 0
    print(f"{summary['execution_arn']}: {summary['status']} (state: {summary['current_state'] or '-'})")
    if summary.get("history"):
        counters = ", ".join(f"{k}={v}" for k, v in summary["history"].items() if k != "latest_job_name")
        print(f"  job {summary['history'].get('latest_job_name') or '-'}: {summary['job_status'] or '-'}; {counters}")
    for attempt in summary["attempts"]:
        line = f"  attempt {attempt['number']}: {attempt['job_name']} -> {attempt['outcome']}"
        if attempt["issue"]:
            line += f" ({attempt['issue']})"
        if attempt["remedy"]:
            line += f"; {attempt['remedy']}: {attempt['reason']}"
        print(line)
    if summary.get("end_reason"):
        print(f"  end: {summary['end_reason']}")
    if summary.get("error"):
        print(f"  failed: {summary['error']}: {summary.get('cause')}")
    return 0


def _guarded(handler):
    def run(arguments: argparse.Namespace) -> int:
        try:
            return handler(arguments)
        except CloudCommandError as error:
            print(f"remediate cloud: {error}", file=sys.stderr)
            return error.exit_code

    return run


def register(subparsers) -> argparse.ArgumentParser:
    cloud = subparsers.add_parser("cloud", help="drive the deployed stack in an AWS account")
    commands = cloud.add_subparsers(dest="cloud_command", metavar="{upload-source,prepare-data,start,status}")
    cloud.set_defaults(help_parser=cloud)  # `remediate cloud` alone prints its help

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--stack-name",
        default=os.environ.get(STACK_NAME_ENV, DEFAULT_STACK_NAME),
        help=f"the deployed stack (default: ${STACK_NAME_ENV} or {DEFAULT_STACK_NAME})",
    )
    common.add_argument("--region", default=None, help="AWS region of the stack (default: the AWS configuration's)")

    upload = commands.add_parser(
        "upload-source",
        parents=[common],
        help="pack a training script's directory with the debugger and upload it (default: the built-in example)",
    )
    upload.add_argument("--source-dir", type=Path, metavar="DIR", help="the directory holding your training script")
    upload.add_argument("--entry-point", metavar="FILE", help="the script to run, relative to --source-dir")
    upload.set_defaults(handler=_guarded(_upload_source_command))

    prepare = commands.add_parser(
        "prepare-data", parents=[common], help="upload the built-in example's train/test channels to data/"
    )
    source = prepare.add_mutually_exclusive_group(required=True)
    source.add_argument("--cifar10-archive", type=Path, help="cifar-10-python.tar.gz to convert")
    source.add_argument("--synthetic", action="store_true", help="generate CIFAR-shaped synthetic data")
    prepare.add_argument("--train-samples", type=int, default=2560)
    prepare.add_argument("--test-samples", type=int, default=512)
    prepare.add_argument("--seed", type=int, default=0)
    prepare.set_defaults(handler=_guarded(_prepare_data_command))

    start = commands.add_parser("start", parents=[common], help="start an execution from a run_spec file")
    start.add_argument("--run-spec", type=Path, help="execution-input JSON (as for `remediate local run`)")
    add_script_options(start)
    start.add_argument("--name", default=None, help="execution name (default: remediation-<UTC time>-<random>)")
    start.add_argument("--json", action="store_true", help="print the execution ARN and input as JSON")
    start.set_defaults(handler=_guarded(_start_command))

    status = commands.add_parser("status", parents=[common], help="show an execution's progress and attempts")
    status.add_argument("execution", metavar="EXECUTION_ARN_OR_NAME")
    status.add_argument("--json", action="store_true", help="print the summary as JSON")
    status.set_defaults(handler=_guarded(_status_command))
    return cloud
