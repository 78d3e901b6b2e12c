"""A script run by the job launcher as SageMaker's script mode runs it, in its own source directory: what the tests of
the debugger's in-job loss changes (class weighting, robust loss) share."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from contracts.job import ENTRY_POINT_HYPERPARAMETER

REPO = Path(__file__).resolve().parents[3]


def launch(tmp_path: Path, name: str, script: str, *extra: str) -> subprocess.CompletedProcess:
    """Run ``script`` as train.py under the launcher with the reserved hyperparameters ``extra``; its failure file is
    ``tmp_path / name / "failure"``."""
    source = tmp_path / name
    source.mkdir()
    (source / "train.py").write_text(textwrap.dedent(script))
    environment = {**os.environ, "PYTHONPATH": str(REPO), "TRAINING_FAILURE_FILE": str(source / "failure"),
                   "OMP_NUM_THREADS": "1"}  # fmt: skip
    launcher = f"from debugger.launcher import main; main({str(source)!r})"
    return subprocess.run(
        [sys.executable, "-c", launcher, f"--{ENTRY_POINT_HYPERPARAMETER}", "train.py", *extra],
        cwd=source, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def printed(process: subprocess.CompletedProcess, first: str) -> dict[str, float]:
    """The ``key=value`` numbers of the script's line that starts with ``first=``."""
    line = next(line for line in process.stdout.splitlines() if line.startswith(f"{first}="))
    return {key: float(value) for key, value in (part.split("=") for part in line.split())}
