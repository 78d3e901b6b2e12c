from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from example_job import EXAMPLE_DIR, LAUNCHER_COMMAND, REPO_ROOT, TRAIN_COMMAND

from contracts.progress_log import parse_progress_line
from model.data import write_synthetic_channels


@pytest.fixture(scope="session")
def small_channels(tmp_path_factory) -> dict[str, Path]:
    """512 training samples (4 steps of 128 per epoch), 256 held out."""
    return write_synthetic_channels(tmp_path_factory.mktemp("small-data"), train_samples=512, test_samples=256, seed=0)


@pytest.fixture(scope="session")
def medium_channels(tmp_path_factory) -> dict[str, Path]:
    """1,024 training samples (8 steps per epoch), 256 held out: the training loss falls clearly within 2 epochs."""
    return write_synthetic_channels(
        tmp_path_factory.mktemp("medium-data"), train_samples=1024, test_samples=256, seed=0
    )


@dataclass
class JobDirectories:
    root: Path
    model: Path
    checkpoints: Path
    failure: Path
    debug_output: Path

    def environment(self, channels: dict[str, Path], job_name: str = "test-job") -> dict[str, str]:
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith(("SM_", "TRAINING_", "DEBUG_"))
        }
        environment.update(
            SM_CHANNEL_TRAIN=str(channels["train"]),
            SM_CHANNEL_TEST=str(channels["test"]),
            SM_MODEL_DIR=str(self.model),
            SM_INPUT_CONFIG_DIR=str(self.root / "config"),
            TRAINING_CHECKPOINT_DIR=str(self.checkpoints),
            TRAINING_FAILURE_FILE=str(self.failure),
            TRAINING_JOB_NAME=job_name,
            TRAINING_NUM_THREADS="2",
            DEBUG_OUTPUT_DIR=str(self.debug_output),
            DEBUG_OUTPUT_S3_SYNC="off",
            PYTHONUNBUFFERED="1",
            # as in the job's source archive: the example's directory and the packed contracts/ and debugger/
            PYTHONPATH=os.pathsep.join([str(EXAMPLE_DIR), str(REPO_ROOT)]),
        )
        return environment


@pytest.fixture
def job_dirs(tmp_path) -> JobDirectories:
    return JobDirectories(
        root=tmp_path,
        model=tmp_path / "model",
        checkpoints=tmp_path / "checkpoints",
        failure=tmp_path / "output" / "failure",
        debug_output=tmp_path / "debug-output",
    )


@dataclass
class FinishedJob:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def progress(self) -> list[dict]:
        return [parsed for line in self.stdout.splitlines() if (parsed := parse_progress_line(line))]

    @property
    def steps(self) -> list[dict]:
        return [line for line in self.progress if line["kind"] == "training_step"]

    @property
    def epochs(self) -> list[dict]:
        return [line for line in self.progress if line["kind"] == "epoch_end"]


@pytest.fixture
def train_command() -> list[str]:
    return list(TRAIN_COMMAND)


@pytest.fixture
def run_training_job():
    """Run ``python -m model.train ARGUMENTS`` to the end (or, with ``launcher=True``, the job launcher with the
    ARGUMENTS as SageMaker passes them); returns a FinishedJob."""

    def run(
        arguments: list[str], environment: dict[str, str], cwd: Path, timeout: float = 300.0, launcher: bool = False
    ) -> FinishedJob:
        command = LAUNCHER_COMMAND if launcher else TRAIN_COMMAND
        completed = subprocess.run(
            command + arguments, env=environment, cwd=cwd, capture_output=True, text=True, timeout=timeout
        )
        return FinishedJob(completed.returncode, completed.stdout, completed.stderr)

    return run
