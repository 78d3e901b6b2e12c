"""Data for the built-in example, made by the example's own tool (``python -m model.data``).

The CLI runs the example's data generator as a process in the example's source
directory, as a user would: it never imports the example's code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from remediate.packaging import BUILTIN_EXAMPLE_DIR, PROJECT_ROOT

#: The example's channels.
CHANNELS = ("train", "test")


class ExampleDataError(RuntimeError):
    """The example's data tool failed; the message carries what it printed."""


def generate_synthetic_channels(out_dir: Path, *, train_samples: int, test_samples: int, seed: int = 0) -> dict[str, Path]:
    """Generated CIFAR-shaped channels (``out_dir/train``, ``out_dir/test``), learnable in a couple of epochs."""
    options = ["--train-samples", str(train_samples), "--test-samples", str(test_samples), "--seed", str(seed)]
    _run_data_tool(["synthetic", "--out", str(out_dir), *options])
    return {name: Path(out_dir) / name for name in CHANNELS}


def convert_cifar10_archive(archive: Path, out_dir: Path) -> dict[str, Path]:
    """The CIFAR-10 python archive the user has (nothing is downloaded) as the example's channels."""
    _run_data_tool(["cifar10", "--archive", str(Path(archive).resolve()), "--out", str(out_dir)])
    return {name: Path(out_dir) / name for name in CHANNELS}


def _run_data_tool(arguments: list[str]) -> None:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BUILTIN_EXAMPLE_DIR), str(PROJECT_ROOT)])}
    result = subprocess.run(
        [sys.executable, "-m", "model.data", *arguments],
        cwd=BUILTIN_EXAMPLE_DIR,
        env=environment,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise ExampleDataError(f"the example's data tool failed: {message[-1] if message else result.returncode}")
