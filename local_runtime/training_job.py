"""One local training job's record: its request, its statuses as SageMaker names them, where its data lives (S3 and
the bucket mirror), its processes' figures and what its log said.

The platform (``local_runtime.training_platform``) creates a record per CreateTrainingJob and every other part of
the local platform reads or updates it under its ``lock``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from contracts import bucket_layout
from contracts.bucket_layout import split_s3_uri
from contracts.job import HOOK_CONFIG_HYPERPARAMETER
from contracts.spot_interruptions import SpotInterruption
from local_runtime.job_hosts import LOG_FILE, HostProcess
from local_runtime.job_log import JobLog

# TrainingJobStatus
IN_PROGRESS, COMPLETED, FAILED, STOPPING, STOPPED = "InProgress", "Completed", "Failed", "Stopping", "Stopped"
TERMINAL_STATUSES = (COMPLETED, FAILED, STOPPED)

#: SecondaryStatusTransitions' StatusMessage per SecondaryStatus.
STATUS_MESSAGES = {
    "Starting": "Launching requested ML instances",
    "Downloading": "Downloading input data",
    "Training": "Training image download completed. Training in progress.",
    "Uploading": "Uploading generated training model",
    "Completed": "Training job completed",
    "Stopping": "Stopping the training job",
    "Stopped": "Training job stopped",
    "MaxRuntimeExceeded": "Training job stopped: it exceeded StoppingCondition.MaxRuntimeInSeconds",
    "Interrupted": "The job stopped because the managed spot training instances were interrupted.",
    "Restarting": "Restarting the training job on a new instance with its checkpoints restored",
}


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class BucketMirror:
    """The local mirror of S3 buckets: ``<root>/buckets/<bucket>/<key>``. A job writes its outputs (debug output,
    checkpoints, model.tar.gz) there; the platform copies them into S3 as SageMaker's uploads would."""

    def __init__(self, root: Path):
        self.root = root

    def bucket_dir(self, bucket: str) -> Path:
        return self.root / "buckets" / bucket

    def local_path(self, s3_uri: str) -> Path:
        bucket, key = split_s3_uri(s3_uri)
        return self.bucket_dir(bucket) / key


@dataclasses.dataclass
class OutputLocation:
    """A local directory mirrored to an S3 prefix."""

    local_dir: Path
    bucket: str
    prefix: str


def debug_output_uri(request: dict[str, Any], hyperparameters: dict[str, str]) -> str | None:
    """The in-job debugger's output: its hook config hyperparameter, else the legacy DebugHookConfig."""
    text = hyperparameters.get(HOOK_CONFIG_HYPERPARAMETER)
    if text:
        try:
            config = json.loads(text)
            if isinstance(config, str):
                config = json.loads(config)
        except json.JSONDecodeError:
            config = None  # the job itself reports a malformed config
        if isinstance(config, dict) and isinstance(config.get("S3OutputPath"), str):
            return config["S3OutputPath"]
    return request.get("DebugHookConfig", {}).get("S3OutputPath")


@dataclasses.dataclass
class TrainingJobRecord:
    name: str
    arn: str
    request: dict[str, Any]
    job_dir: Path
    created: dt.datetime
    hyperparameters: dict[str, str] = dataclasses.field(default_factory=dict)  # decoded once, at creation
    debug_output_uri: str | None = None
    status: str = IN_PROGRESS
    secondary_status: str = "Starting"
    transitions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    failure_reason: str | None = None
    training_start: dt.datetime | None = None
    training_end: dt.datetime | None = None
    last_modified: dt.datetime | None = None
    process: subprocess.Popen | None = None  # algo-1's (each host's: hosts)
    hosts: list[HostProcess] = dataclasses.field(default_factory=list)
    exit_code: int | None = None  # as subprocess reports it: -N when signal N killed the process
    killed_by_signal: str | None = None  # "SIGKILL" when a signal the platform did not send ended the process
    peak_memory_bytes: int | None = None  # the process's peak resident memory, where the kernel told it
    stop_reason: str | None = None  # "StopTrainingJob" | "MaxRuntimeExceeded" | "shutdown"
    #: The spot interruptions the request asked for (local runs: contracts.spot_interruptions), and those that happened:
    #: {"requested": "at step 30", "at_step": the step the job had reached, "restored_files": checkpoint files restored}.
    spot_interruptions: list[SpotInterruption] = dataclasses.field(default_factory=list)
    interruptions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    process_seconds: float = 0.0
    process_started: float | None = None  # time.monotonic() at launch
    process_ended: float | None = None  # time.monotonic() at exit
    outputs: list[OutputLocation] = dataclasses.field(default_factory=list)
    synced: dict[tuple[str, str], tuple[int, int]] = dataclasses.field(default_factory=dict)
    lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)
    worker: threading.Thread | None = None
    log: JobLog = dataclasses.field(init=False)  # algo-1's log, read as it grows

    def __post_init__(self) -> None:
        self.log = JobLog(self.job_dir / LOG_FILE)

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL_STATUSES

    # ------------------------------------------------------------------ what its log said

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The training-step progress lines read so far (``contracts.progress_log``)."""
        return self.log.steps

    @property
    def epochs(self) -> list[dict[str, Any]]:
        """The epoch-end progress lines read so far."""
        return self.log.epochs

    # ------------------------------------------------------------------ statuses

    def transition(self, secondary: str, message: str | None = None) -> None:
        """Enter SecondaryStatus ``secondary`` (the previous transition ends now). Caller holds ``lock``."""
        at = now()
        if self.transitions and "EndTime" not in self.transitions[-1]:
            self.transitions[-1]["EndTime"] = at
        self.transitions.append(
            {
                "Status": secondary,
                "StartTime": at,
                "StatusMessage": message or STATUS_MESSAGES.get(secondary, secondary),
            }
        )
        self.secondary_status = secondary
        self.last_modified = at

    def finish(self, status: str, secondary: str, message: str | None = None) -> None:
        """End the job with TrainingJobStatus ``status``. Caller holds ``lock``."""
        self.transition(secondary, message)
        self.transitions[-1]["EndTime"] = self.transitions[-1]["StartTime"]
        self.status = status
        self.training_end = self.last_modified

    # ------------------------------------------------------------------ where its data lives in S3

    @property
    def checkpoint_uri(self) -> str | None:
        return self.request.get("CheckpointConfig", {}).get("S3Uri")

    @property
    def model_artifact_uri(self) -> str:
        output_path = self.request["OutputDataConfig"]["S3OutputPath"].rstrip("/")
        return f"{output_path}/{self.name}/output/model.tar.gz"

    @property
    def tensorboard_uri(self) -> str | None:
        """Where SageMaker uploads the job's TensorBoardOutputConfig LocalPath: {S3OutputPath}/{job}/tensorboard-output/."""
        tensorboard = self.request.get("TensorBoardOutputConfig")
        return bucket_layout.tensorboard_job_uri(tensorboard["S3OutputPath"], self.name) if tensorboard else None
