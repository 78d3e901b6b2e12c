"""What `remediate local run` checks before anything starts, and the run it prepares.

Every file, directory and value is checked here, in order, and the first
problem is a :class:`BadInput` whose message names the option or field, the
path or value found, and what is allowed. Nothing has been started and nothing
written when it is raised: no run directory, no account, no process (the
example's own check tools aside, which only read).
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contracts import ContractError
from contracts.distributed import check_instance_count
from remediate.example_tools import CHANNELS, ExampleToolError, check_hyperparameters
from remediate.run_directory import RunDirectoryError, check_run_dir
from remediate.run_inputs import apply_script_options, uses_builtin_example
from remediate.run_spec_file import RunSpecError, check_execution_input, read_run_spec
from remediate.staging import StagedUpload, StagingError, plan_staging


class BadInput(Exception):
    """Bad command-line input; the message names the field or option and the fix."""


@dataclass
class PreparedRun:
    """A checked execution input whose local files are packed and ready to upload."""

    execution_input: dict[str, Any]
    uploads: list[StagedUpload]
    generate_example_data: bool
    scratch: tempfile.TemporaryDirectory

    @property
    def policy(self) -> str:
        return self.execution_input.get("policy") or ("evidence" if self.uses_builtin_example else "declared")

    @property
    def uses_builtin_example(self) -> bool:
        return uses_builtin_example(self.execution_input)


def prepare_run(arguments: argparse.Namespace) -> PreparedRun:
    """The execution input from --run-spec and the options, staged and validated as the workflow validates
    it; BadInput before anything starts."""
    from local_runtime.runtime import RuntimeOptions, local_execution_input

    scratch = tempfile.TemporaryDirectory(prefix="remediate-local-")
    try:
        if arguments.run_dir is not None:
            check_run_dir(arguments.run_dir)
        if arguments.run_spec is not None:
            run_spec = read_run_spec(arguments.run_spec)
            base_dir = Path(arguments.run_spec).resolve().parent
        else:
            run_spec, base_dir = {}, Path.cwd()
        run_spec = apply_script_options(run_spec, arguments)
        if arguments.policy:
            run_spec["policy"] = arguments.policy
        example = uses_builtin_example(run_spec)
        _check_sample_options(arguments, example)
        labels = {}
        if arguments.data is not None:
            given = run_spec.get("channels") or {}
            if not isinstance(given, dict):
                raise BadInput("channels: must be a JSON object of channel name: directory or s3:// prefix")
            found = data_channels(arguments.data, example)
            run_spec["channels"] = {**given, **found}
            labels = {name: f"--data {arguments.data} ({name}/)" for name in found}
        for pair in arguments.channel or []:
            name = pair.partition("=")[0]
            labels[name] = f"--channel {pair}"
        execution_input = local_execution_input(RuntimeOptions(run_dir=Path(".")), run_spec)
        staged, uploads = plan_staging(execution_input, Path(scratch.name), base_dir, labels)
        where = f"--run-spec {arguments.run_spec}" if arguments.run_spec else "execution input"
        state = check_execution_input(staged, where)
        try:  # every instance is a process on this machine
            check_instance_count(state.run_spec.instance_count, local=True)
        except ContractError as error:
            raise BadInput(f"{where}: {error}") from None
        if example:
            try:
                check_hyperparameters(state.run_spec.hyperparameters)
            except ExampleToolError as error:
                raise BadInput(f"{where}: the built-in example refuses its hyperparameters: {error}") from None
    except (RunSpecError, StagingError, RunDirectoryError) as error:
        scratch.cleanup()
        raise BadInput(str(error)) from None
    except BaseException:
        scratch.cleanup()
        raise
    generate = example and not staged.get("channels")
    return PreparedRun(staged, uploads, generate, scratch)


def _check_sample_options(arguments: argparse.Namespace, example: bool) -> None:
    samples = {"--train-samples": arguments.train_samples, "--test-samples": arguments.test_samples}
    for option, value in samples.items():
        if value is None:
            continue
        if not example:
            raise BadInput(
                f"{option}: generates data for the built-in example only; give your script's data with --data or --channel"
            )
        if arguments.data is not None or arguments.channel:
            raise BadInput(f"{option}: sizes the generated data; it has no meaning with --data or --channel")


def data_channels(data_dir: Path, example: bool) -> dict[str, str]:
    """--data DIR: each subdirectory is a channel (the built-in example needs train/ and test/)."""
    if not data_dir.is_dir():
        found = "is a file" if data_dir.exists() else "no such directory"
        raise BadInput(f"--data {data_dir}: {found}; give a directory whose subdirectories are the channels (train/, test/)")
    try:
        channels = {path.name: str(path.resolve()) for path in sorted(data_dir.iterdir()) if path.is_dir()}
    except PermissionError:
        raise BadInput(f"--data {data_dir}: cannot be read (permission denied); make it readable") from None
    if example:
        missing = [name for name in CHANNELS if name not in channels]
        if missing:
            raise BadInput(
                f"--data {data_dir}: {', '.join(missing)}/ is missing; the built-in example reads train/ and test/, "
                "each with x.npy and y.npy (make them with: python -m model.data synthetic --out DIR, in the project's root)"
            )
    if not channels:
        raise BadInput(f"--data {data_dir}: has no subdirectories; each subdirectory is a channel")
    return channels
