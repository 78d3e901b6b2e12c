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
    command = [
        sys.executable,
        "-m",
        "model.data",
        "synthetic",
        "--out",
        str(out_dir),
        "--train-samples",
        str(train_samples),
        "--test-samples",
        str(test_samples),
        "--seed",
        str(seed),
    ]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BUILTIN_EXAMPLE_DIR), str(PROJECT_ROOT)])}
    result = subprocess.run(command, cwd=BUILTIN_EXAMPLE_DIR, env=environment, capture_output=True, text=True)
    if result.returncode != 0:
        raise ExampleDataError(f"the example's data generator failed: {(result.stderr or result.stdout).strip()[-2000:]}")
    return {name: Path(out_dir) / name for name in CHANNELS}
