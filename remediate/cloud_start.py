"""`remediate cloud start`: the execution input from a run_spec and the stack, checked as the workflow checks it,
its local files uploaded, and StartExecution."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from remediate.aws_access import CloudCommandError, aws_call
from remediate.cloud_stack import StackOutputs, outputs_for
from remediate.cloud_uploads import stage_locally, upload_file
from remediate.run_inputs import apply_script_options
from remediate.run_spec_file import RunSpecError, check_execution_input, read_run_spec

EXECUTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
#: Valid stand-ins for the stack's values, so a run_spec's own fields are checked before any AWS call.
PRECHECK_STACK_VALUES = {
    "bucket": "precheck-bucket",
    "region": "us-east-1",
    "sm_role": "arn:aws:iam::123456789012:role/precheck",
}


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


def precheck_run_spec(run_spec: Mapping[str, Any]) -> None:
    """Validate the run_spec's own fields offline (the stack's values are checked once they are known)."""
    _validate_execution_input({**PRECHECK_STACK_VALUES, **dict(run_spec)})


def default_execution_name() -> str:
    return f"remediation-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"


def start_execution(session, outputs: StackOutputs, execution_input: Mapping[str, Any], name: str | None) -> dict:
    """name: already checked against EXECUTION_NAME (by start_command), or None for a fresh default name."""
    client = session.client("stepfunctions")
    return aws_call(
        "StartExecution",
        client.start_execution,
        stateMachineArn=outputs.state_machine_arn,
        name=name or default_execution_name(),
        input=json.dumps(dict(execution_input)),
    )


def start_command(arguments: argparse.Namespace) -> int:
    run_spec = load_run_spec(arguments.run_spec) if arguments.run_spec else {}
    base_dir = Path(arguments.run_spec).resolve().parent if arguments.run_spec else Path.cwd()
    try:
        run_spec = apply_script_options(run_spec, arguments)
    except RunSpecError as error:
        raise CloudCommandError(str(error)) from None
    with tempfile.TemporaryDirectory(prefix="remediate-start-") as scratch:
        staged, _ = stage_locally(run_spec, Path(scratch), base_dir, PRECHECK_STACK_VALUES["bucket"])
        precheck_run_spec(staged)
        if arguments.name is not None and not EXECUTION_NAME.fullmatch(arguments.name):
            raise CloudCommandError(f"--name: {arguments.name!r} must be 1-80 letters, digits, '-' or '_'")
        session, outputs = outputs_for(arguments)
        staged, uploads = stage_locally(run_spec, Path(scratch), base_dir, outputs.bucket)
        execution_input = build_execution_input(staged, outputs)
        for item in uploads:
            upload_file(session, outputs.bucket, item.key, item.local_path)
    response = start_execution(session, outputs, execution_input, arguments.name)
    if arguments.json:
        print(json.dumps({"executionArn": response["executionArn"], "input": execution_input}, indent=2, default=str))
    else:
        print(f"started {response['executionArn']}")
        print(f"follow it with: remediate cloud status --watch {response['executionArn']}")
    return 0
