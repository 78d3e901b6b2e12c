"""``remediate cloud ...``: drive the deployed stack (upload the training source and data, start, follow).

    remediate cloud upload-source [--source-dir DIR --entry-point FILE] [--stack-name NAME]
    remediate cloud prepare-data (--synthetic [--train-samples N --test-samples M --seed S] | --cifar10-archive FILE)
    remediate cloud start [--run-spec FILE] [--source-dir DIR --entry-point FILE --hyperparameters ...] [--name NAME]
    remediate cloud status EXECUTION_ARN_OR_NAME [--json | --watch [--poll-seconds S]]
    remediate cloud stop EXECUTION_ARN_OR_NAME [--cause TEXT]

Every command finds the bucket, the state machine and the SageMaker role in the
stack's outputs (CloudFormation DescribeStacks). The run_spec file is the same
execution-input JSON that ``remediate local run --run-spec`` takes; bucket,
region and sm_role come from the stack and are validated with the same
ExecutionInput model before anything starts. One module per command:
``cloud_start``, ``cloud_status``, ``cloud_stop`` (and ``cloud_uploads`` for
upload-source and prepare-data); this one holds the command line.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from infra.outputs import DEFAULT_STACK_NAME
from remediate.aws_access import CloudCommandError
from remediate.cloud_stack import STACK_NAME_ENV, outputs_for
from remediate.cloud_start import start_command
from remediate.cloud_status import DEFAULT_WATCH_SECONDS, status_command
from remediate.cloud_stop import stop_command
from remediate.cloud_uploads import (
    check_local_source,
    prepare_example_channels,
    upload_example_channels,
    upload_source,
)
from remediate.run_inputs import add_script_options


def _upload_source_command(arguments: argparse.Namespace) -> int:
    if (arguments.source_dir is None) != (arguments.entry_point is None):
        raise CloudCommandError("--source-dir and --entry-point go together: your directory and the script in it")
    if arguments.source_dir is not None:  # checked before any AWS call
        check_local_source(arguments.source_dir, arguments.entry_point)
    session, outputs = outputs_for(arguments)
    uri = upload_source(session, outputs, arguments.source_dir, arguments.entry_point)
    print(f"uploaded the training source to {uri}")
    if arguments.source_dir is not None:
        print(f'use it in a run_spec: "source_dir": "{uri}", "entry_point": "{arguments.entry_point}"')
    return 0


def _prepare_data_command(arguments: argparse.Namespace) -> int:
    for name in ("train_samples", "test_samples"):
        if getattr(arguments, name) < 1:
            raise CloudCommandError(f"--{name.replace('_', '-')}: must be >= 1 (got {getattr(arguments, name)})")
    session, outputs = outputs_for(arguments)
    with tempfile.TemporaryDirectory(prefix="remediate-data-") as scratch:
        channels = prepare_example_channels(arguments, Path(scratch))
        uris = upload_example_channels(session, outputs, channels)
    for uri in uris:
        print(f"uploaded {uri}")
    return 0


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds (got {text!r})") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds (got {text})")
    return value


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
    commands = cloud.add_subparsers(dest="cloud_command", metavar="{upload-source,prepare-data,start,status,stop}")
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
    start.set_defaults(handler=_guarded(start_command))

    status = commands.add_parser("status", parents=[common], help="show an execution's progress and attempts")
    status.add_argument("execution", metavar="EXECUTION_ARN_OR_NAME")
    shown = status.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print the summary as JSON")
    shown.add_argument(
        "--watch",
        action="store_true",
        help="follow it: a line per new attempt, outcome and decision until it ends (exit 0 if it succeeded)",
    )
    status.add_argument(
        "--poll-seconds",
        type=_positive_seconds,
        default=DEFAULT_WATCH_SECONDS,
        metavar="S",
        help=f"with --watch: seconds between reads (default {DEFAULT_WATCH_SECONDS:g})",
    )
    status.set_defaults(handler=_guarded(status_command))

    stop = commands.add_parser(
        "stop", parents=[common], help="stop an execution and the training job it launched (only a job it owns)"
    )
    stop.add_argument("execution", metavar="EXECUTION_ARN_OR_NAME")
    stop.add_argument("--cause", default="stopped with remediate cloud stop", help="why (recorded in the execution)")
    stop.set_defaults(handler=_guarded(stop_command))
    return cloud
