"""The built-in example's own tools, run as processes in the example's source directory, as a user would run
them: its data generator and converter (``python -m model.data``) and its input checks (``model.data check``,
``model.hyperparameters check``). The CLI never imports the example's code: the example is a training script
like any other, and what it accepts is its own business, stated once in its own modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from remediate.packaging import BUILTIN_EXAMPLE_DIR, BUILTIN_MODEL_DIR, PROJECT_ROOT

#: The example's channels.
CHANNELS = ("train", "test")


class ExampleToolError(RuntimeError):
    """The example's tool refused its input or failed; the message is the tool's own last line."""


def generate_synthetic_channels(out_dir: Path, *, train_samples: int, test_samples: int, seed: int = 0) -> dict[str, Path]:
    """Generated CIFAR-shaped channels (``out_dir/train``, ``out_dir/test``), learnable in a couple of epochs."""
    options = ["--train-samples", str(train_samples), "--test-samples", str(test_samples), "--seed", str(seed)]
    _run_tool("model.data", ["synthetic", "--out", str(out_dir), *options])
    return {name: Path(out_dir) / name for name in CHANNELS}


def convert_cifar10_archive(archive: Path, out_dir: Path) -> dict[str, Path]:
    """The CIFAR-10 python archive the user has (nothing is downloaded) as the example's channels."""
    _run_tool("model.data", ["cifar10", "--archive", str(Path(archive).resolve()), "--out", str(out_dir)])
    return {name: Path(out_dir) / name for name in CHANNELS}


def check_channels(directories: list[Path]) -> None:
    """Each directory is a channel the example can read: headers, sizes and labels, read without loading the
    images. ExampleToolError with the example's message (it names the file, what it found and the fix)."""
    _run_tool("model.data", ["check", *(str(Path(directory).resolve()) for directory in directories)])


def check_hyperparameters(values: Mapping[str, Any]) -> None:
    """The example takes these hyperparameters (names, JSON types, ranges), as its job would check them."""
    _run_tool("model.hyperparameters", ["check", json.dumps(dict(values))])


def _run_tool(module: str, arguments: list[str]) -> None:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BUILTIN_MODEL_DIR.parent), str(PROJECT_ROOT)])}
    result = subprocess.run(
        [sys.executable, "-m", module, *arguments],
        cwd=BUILTIN_EXAMPLE_DIR,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        message = lines[-1] if lines else f"exit code {result.returncode}"
        raise ExampleToolError(message.removeprefix("error: "))
