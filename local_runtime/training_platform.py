"""A local SageMaker training platform: CreateTrainingJob / DescribeTrainingJob / StopTrainingJob.

It answers the same requests (already validated by botocore against the real
schema, see ``local_runtime.sagemaker_api``) with the same response shapes and
status vocabulary, and runs the job for real: the entry point from
``sagemaker_submit_directory`` runs as ``python train.py --name value ...`` in its
own process session, with the SageMaker container contract mapped to
directories of one job folder (``input/config``, ``input/data/<channel>``,
``model``, ``output``).

S3 is whatever S3 the given client talks to (moto's in local mode). Inputs are
read from it; outputs the job writes under the local mirror of a bucket
(``<root>/buckets/<bucket>/<key>``: debug output, checkpoints, model.tar.gz)
are copied into it on every Describe and when the job ends, as SageMaker's
uploads would make them appear.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contracts import ContractError, bucket_layout
from contracts.atomic_files import write_atomically
from contracts.bucket_layout import split_s3_uri
from contracts.distributed import LOCAL_INSTANCE_COUNT_HIGH, launcher_from_hyperparameters
from contracts.job import (
    HOOK_CONFIG_HYPERPARAMETER,
    SAGEMAKER_RESERVED_PREFIX,
    TENSORBOARD_CONFIG_FILE,
    decode_hyperparameter,
    killed_process_failure_text,
    script_mode_arguments,
)
from contracts.progress_log import parse_progress_line
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from local_runtime.botocore_dispatch import ServiceError
from local_runtime.framework_images import local_stand_in
from local_runtime.job_hosts import (
    LOG_FILE,
    HostGroup,
    HostProcess,
    free_port,
    host_variables,
    job_hosts,
    prepare_host_directories,
)
from local_runtime.job_process import LAUNCHER, format_bytes

ACCOUNT_ID = "123456789012"
DEFAULT_STOP_GRACE_SECONDS = 10.0

# TrainingJobStatus
IN_PROGRESS, COMPLETED, FAILED, STOPPING, STOPPED = "InProgress", "Completed", "Failed", "Stopping", "Stopped"
TERMINAL_STATUSES = (COMPLETED, FAILED, STOPPED)

_STATUS_MESSAGES = {
    "Starting": "Launching requested ML instances",
    "Downloading": "Downloading input data",
    "Training": "Training image download completed. Training in progress.",
    "Uploading": "Uploading generated training model",
    "Completed": "Training job completed",
    "Stopping": "Stopping the training job",
    "Stopped": "Training job stopped",
    "MaxRuntimeExceeded": "Training job stopped: it exceeded StoppingCondition.MaxRuntimeInSeconds",
}


class SageMakerError(ServiceError):
    """An error as SageMaker returns it: through the dispatch seam botocore raises ClientError with this code."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _debug_output_uri(request: dict[str, Any], hyperparameters: dict[str, str]) -> str | None:
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
class _Output:
    """A local directory mirrored to an S3 prefix."""

    local_dir: Path
    bucket: str
    prefix: str


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
    process_seconds: float = 0.0
    process_started: float | None = None  # time.monotonic() at launch
    process_ended: float | None = None  # time.monotonic() at exit
    outputs: list[_Output] = dataclasses.field(default_factory=list)
    synced: dict[tuple[str, str], tuple[int, int]] = dataclasses.field(default_factory=dict)
    log_offset: int = 0
    log_remainder: str = ""
    metric_values: dict[str, tuple[float, dt.datetime]] = dataclasses.field(default_factory=dict)
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    epochs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    lock: threading.RLock = dataclasses.field(default_factory=threading.RLock)
    worker: threading.Thread | None = None

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL_STATUSES


class LocalTrainingPlatform:
    """Runs training jobs as local subprocesses behind SageMaker's training API."""

    def __init__(
        self,
        root: Path,
        s3_client_factory: Callable[[], Any],
        *,
        region: str = "us-east-1",
        num_threads: int | None = None,
        stop_grace_seconds: float = DEFAULT_STOP_GRACE_SECONDS,
        python: str = sys.executable,
        on_status_change: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.root = Path(root).resolve()  # jobs run in their own working directory
        #: Called with the job's description when its TrainingJobStatus changes (to Stopping, and to its final status
        #: once its outputs are in S3), as SageMaker sends "SageMaker Training Job State Change" to EventBridge.
        #: Called with the job's lock held (Stopping): it must only hand the description on.
        self.on_status_change = on_status_change
        self.region = region
        self.num_threads = num_threads or max(1, os.cpu_count() or 1)
        self.stop_grace_seconds = stop_grace_seconds
        self.python = python
        self._s3_client_factory = s3_client_factory
        self._s3 = None
        self._s3_lock = threading.Lock()
        self._lock = threading.RLock()
        self._jobs: dict[str, TrainingJobRecord] = {}
        self._shutting_down = False

    # ------------------------------------------------------------------ paths and S3

    def bucket_dir(self, bucket: str) -> Path:
        return self.root / "buckets" / bucket

    def local_path_for(self, s3_uri: str) -> Path:
        bucket, key = split_s3_uri(s3_uri)
        return self.bucket_dir(bucket) / key

    def job_dir(self, name: str) -> Path:
        return self.root / "jobs" / name

    def _client(self):
        with self._s3_lock:
            if self._s3 is None:
                self._s3 = self._s3_client_factory()
            return self._s3

    # ------------------------------------------------------------------ the API

    def create_training_job(self, **request: Any) -> dict[str, Any]:
        name = request["TrainingJobName"]
        hyperparameters = {
            key: decode_hyperparameter(value) for key, value in request.get("HyperParameters", {}).items()
        }
        for required in ("sagemaker_submit_directory", "sagemaker_program"):
            if required not in hyperparameters:
                raise SageMakerError(
                    "ValidationException",
                    f"HyperParameters.{required} is required by the local platform (script mode): "
                    "set it to the source archive's s3:// URI and the entry point file",
                )
        try:
            split_s3_uri(hyperparameters["sagemaker_submit_directory"])
        except ValueError as error:
            raise SageMakerError(
                "ValidationException", f"HyperParameters.sagemaker_submit_directory: {error}"
            ) from None
        instance_count = request.get("ResourceConfig", {}).get("InstanceCount", 1)
        if not 1 <= instance_count <= LOCAL_INSTANCE_COUNT_HIGH:
            raise SageMakerError(
                "ValidationException",
                f"ResourceConfig.InstanceCount: the local platform runs 1 to {LOCAL_INSTANCE_COUNT_HIGH} instances, each "
                f"a process on this machine (got {instance_count})",
            )
        arn = f"arn:aws:sagemaker:{self.region}:{ACCOUNT_ID}:training-job/{name.lower()}"
        with self._lock:
            if self._shutting_down:
                raise SageMakerError("ThrottlingException", "the local training platform is shutting down")
            if name in self._jobs:
                raise SageMakerError(
                    "ResourceInUse",
                    f"Training job names must be unique within an AWS account and region, and a training job with "
                    f"this name already exists ({arn})",
                )
            job = TrainingJobRecord(
                name=name,
                arn=arn,
                request=request,
                job_dir=self.job_dir(name),
                created=_now(),
                hyperparameters=hyperparameters,
                debug_output_uri=_debug_output_uri(request, hyperparameters),
                hosts=job_hosts(self.job_dir(name), instance_count),
            )
            self._transition(job, "Starting")
            self._jobs[name] = job
        job.worker = threading.Thread(target=self._run_job, args=(job,), name=f"training-job-{name}", daemon=True)
        job.worker.start()
        return {"TrainingJobArn": arn}

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        job = self._job(TrainingJobName)
        self.sync_outputs(job)
        self.read_progress(job)
        with job.lock:
            return self._describe(job)

    def stop_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        job = self._job(TrainingJobName)
        with job.lock:
            if job.ended or job.status == STOPPING:
                raise SageMakerError(
                    "ValidationException",
                    f"The request was rejected because the training job is in status {job.status}.",
                )
            self._request_stop(job, "StopTrainingJob")
        return {}

    def list_tags(self, ResourceArn: str) -> dict[str, Any]:  # noqa: N803 - SageMaker's parameter name
        """The tags a training job was created with (the workflow reads them to prove a job is its own)."""
        with self._lock:
            job = next((job for job in self._jobs.values() if job.arn == ResourceArn), None)
        if job is None:
            raise SageMakerError("ValidationException", f"Requested resource not found: {ResourceArn}")
        return {"Tags": [dict(tag) for tag in job.request.get("Tags", [])]}

    # ------------------------------------------------------------------ queries for the runtime and CLI

    def job_names(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def job(self, name: str) -> TrainingJobRecord:
        return self._job(name)

    def running_process_ids(self) -> list[int]:
        with self._lock:
            jobs = list(self._jobs.values())
        return [process.pid for job in jobs for process in HostGroup(job.hosts).processes if process.poll() is None]

    def seconds_with_a_process_running(self) -> float:
        """Wall seconds during which at least one training process ran (the union of their lifetimes).

        A stopped job may still be exiting while the next one starts; the union counts that overlap once.
        """
        with self._lock:
            jobs = list(self._jobs.values())
        now = time.monotonic()
        intervals = sorted(
            (job.process_started, job.process_ended or now) for job in jobs if job.process_started is not None
        )
        total, current_start, current_end = 0.0, None, None
        for start, end in intervals:
            if current_end is None or start > current_end:
                if current_end is not None:
                    total += current_end - current_start
                current_start, current_end = start, end
            else:
                current_end = max(current_end, end)
        if current_end is not None:
            total += current_end - current_start
        return total

    def read_progress(self, job: TrainingJobRecord) -> dict[str, Any]:
        """Parse the log lines written since the last call; return the latest step and epoch records."""
        log_path = job.job_dir / LOG_FILE
        with job.lock:
            if log_path.exists():
                with open(log_path, "rb") as log:
                    log.seek(job.log_offset)
                    chunk = log.read()
                job.log_offset += len(chunk)
                text = job.log_remainder + chunk.decode("utf-8", errors="replace")
                lines = text.split("\n")
                job.log_remainder = lines.pop()
                definitions = job.request.get("AlgorithmSpecification", {}).get("MetricDefinitions", [])
                for line in lines:
                    self._read_line(job, line, definitions)
            return {
                "step": job.steps[-1] if job.steps else None,
                "epoch": job.epochs[-1] if job.epochs else None,
            }

    def debug_output_dir(self, job: TrainingJobRecord) -> Path:
        """Where the job's debugger writes (the local mirror of its S3 debug output)."""
        if job.debug_output_uri:
            return self.local_path_for(job.debug_output_uri)
        return job.job_dir / "output" / "tensors"

    def rule_status_document(self, job: TrainingJobRecord) -> RuleStatusDocument | None:
        """The job's rule-status document as its debugger last wrote it, or None (not written, or unreadable)."""
        try:
            return RuleStatusDocument.from_json((self.debug_output_dir(job) / RULE_STATUS_FILE).read_bytes())
        except (OSError, ContractError):
            return None

    def shutdown(self, timeout: float | None = None) -> None:
        """Refuse new jobs, stop every running one (SIGTERM, SIGKILL after the grace period), wait for them."""
        with self._lock:
            self._shutting_down = True
            jobs = list(self._jobs.values())
        for job in jobs:
            with job.lock:
                if not job.ended and job.status != STOPPING:
                    self._request_stop(job, "shutdown")
        deadline = time.monotonic() + (timeout if timeout is not None else self.stop_grace_seconds + 10)
        for job in jobs:
            if job.worker is not None:
                job.worker.join(max(0.0, deadline - time.monotonic()))
            for process in HostGroup(job.hosts).processes:
                if process.poll() is None:
                    self._kill_group(process, signal.SIGKILL)
                    process.wait()

    # ------------------------------------------------------------------ internals

    def _job(self, name: str) -> TrainingJobRecord:
        with self._lock:
            job = self._jobs.get(name)
        if job is None:
            raise SageMakerError("ValidationException", "Requested resource not found.")
        return job

    def _transition(self, job: TrainingJobRecord, secondary: str, message: str | None = None) -> None:
        now = _now()
        if job.transitions and "EndTime" not in job.transitions[-1]:
            job.transitions[-1]["EndTime"] = now
        job.transitions.append(
            {
                "Status": secondary,
                "StartTime": now,
                "StatusMessage": message or _STATUS_MESSAGES.get(secondary, secondary),
            }
        )
        job.secondary_status = secondary
        job.last_modified = now

    def _finish(self, job: TrainingJobRecord, status: str, secondary: str, message: str | None = None) -> None:
        self._transition(job, secondary, message)
        job.transitions[-1]["EndTime"] = job.transitions[-1]["StartTime"]
        job.status = status
        job.training_end = job.last_modified

    def _request_stop(self, job: TrainingJobRecord, reason: str) -> None:
        """Caller holds job.lock."""
        job.stop_reason = reason
        job.status = STOPPING
        if reason != "MaxRuntimeExceeded":  # SageMaker goes straight to its MaxRuntimeExceeded secondary status
            self._transition(job, "Stopping")
        HostGroup(job.hosts).signal(signal.SIGTERM)  # every host's process: the job stops as one
        self._announce(job)

    def _announce(self, job: TrainingJobRecord) -> None:
        if self.on_status_change is not None:
            with job.lock:
                described = self._describe(job)
            try:
                self.on_status_change(described)
            except Exception:  # noqa: BLE001 - a listener's failure must not change the job
                pass

    @staticmethod
    def _kill_group(process: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(process.pid, sig)  # the job runs in its own session: pgid == pid
        except ProcessLookupError:
            pass

    def _run_job(self, job: TrainingJobRecord) -> None:
        try:
            self._prepare(job)
            self._train(job)
        except Exception as error:  # the platform's own failure: the job fails with a reason, as SageMaker's would
            with job.lock:
                HostGroup(job.hosts).kill()
                if not job.ended:
                    job.failure_reason = f"ClientError: {error}"
                    self._finish(job, FAILED, "Failed", f"Training job failed. Reason: {job.failure_reason}")
        finally:
            try:
                self.read_progress(job)
                self.sync_outputs(job)
            except Exception:  # noqa: BLE001 - outputs are best effort once the job has ended
                pass
            self._announce(job)  # its final status, now that what it wrote is in S3

    def _prepare(self, job: TrainingJobRecord) -> None:
        request = job.request
        with job.lock:
            if job.status == STOPPING:
                return
            self._transition(job, "Downloading")
        config_dir = job.job_dir / "input" / "config"
        for directory in (config_dir, job.job_dir / "model", job.job_dir / "output" / "data", job.job_dir / "code"):
            directory.mkdir(parents=True, exist_ok=True)
        _write_json(config_dir / "hyperparameters.json", request.get("HyperParameters", {}))
        channels = {}
        for channel in request.get("InputDataConfig", []):
            channels[channel["ChannelName"]] = {
                "ContentType": channel.get("ContentType", ""),
                "TrainingInputMode": channel.get(
                    "InputMode", request.get("AlgorithmSpecification", {}).get("TrainingInputMode", "File")
                ),
                "S3DistributionType": channel.get("DataSource", {})
                .get("S3DataSource", {})
                .get("S3DataDistributionType", "FullyReplicated"),
                "RecordWrapperType": channel.get("RecordWrapperType", "None"),
            }
        _write_json(config_dir / "inputdataconfig.json", channels)
        tensorboard = request.get("TensorBoardOutputConfig")
        if tensorboard:  # as SageMaker: the file the job's hook reads (LocalPath: see tensorboard_dir)
            _write_json(config_dir / TENSORBOARD_CONFIG_FILE, {**tensorboard, "LocalPath": str(self.tensorboard_dir(job))})
        prepare_host_directories(job.hosts, config_dir)  # each host's resourceconfig.json (current_host, hosts)
        self._download_archive(job.hyperparameters["sagemaker_submit_directory"], job.job_dir / "code")
        for channel in request.get("InputDataConfig", []):
            source = channel.get("DataSource", {}).get("S3DataSource")
            if source is None:
                raise ValueError(f"channel {channel['ChannelName']!r}: only S3DataSource is supported locally")
            if source.get("S3DataType", "S3Prefix") != "S3Prefix":
                raise ValueError(f"channel {channel['ChannelName']!r}: only S3DataType S3Prefix is supported locally")
            self._download_prefix(source["S3Uri"], job.job_dir / "input" / "data" / channel["ChannelName"])
        # As SageMaker does: what the checkpoint S3Uri already holds (a resumed job's carried-over checkpoints)
        # is in the checkpoint directory before the script starts.
        checkpoint_uri = request.get("CheckpointConfig", {}).get("S3Uri")
        if checkpoint_uri:
            self._download_prefix(checkpoint_uri, self.local_path_for(checkpoint_uri), required=False)
        # The image would bring the framework; here this machine's Python does: say which release stands in for it.
        stand_in = local_stand_in(request.get("AlgorithmSpecification", {}).get("TrainingImage", ""))
        with open(job.job_dir / LOG_FILE, "a", encoding="utf-8") as log:
            log.write(stand_in + "\n")

        with job.lock:
            job.outputs = self._output_locations(job)
            for output in job.outputs:
                output.local_dir.mkdir(parents=True, exist_ok=True)

    def _output_locations(self, job: TrainingJobRecord) -> list[_Output]:
        """Checkpoints, debug output, the model artifact's folder and TensorBoard's: local directories mirrored to S3
        (a file two of them hold, TensorBoard's inside the debug output, is put once: the sync keys by S3 key)."""
        uris = (
            job.request.get("CheckpointConfig", {}).get("S3Uri"),
            job.debug_output_uri,
            self._model_artifact_uri(job).rsplit("/", 1)[0] + "/",
            self._tensorboard_uri(job),
        )
        return [_Output(self.local_path_for(uri), *split_s3_uri(uri)) for uri in uris if uri]

    def _tensorboard_uri(self, job: TrainingJobRecord) -> str | None:
        """Where SageMaker uploads the job's TensorBoardOutputConfig LocalPath: {S3OutputPath}/{job}/tensorboard-output/."""
        tensorboard = job.request.get("TensorBoardOutputConfig")
        return bucket_layout.tensorboard_job_uri(tensorboard["S3OutputPath"], job.name) if tensorboard else None

    def tensorboard_dir(self, job: TrainingJobRecord) -> Path | None:
        """The job's TensorBoard LocalPath here: its S3 destination's local mirror, as for the other outputs (so a run
        directory's buckets/ hold every job's event files where S3 would, for one ``tensorboard --logdir``)."""
        uri = self._tensorboard_uri(job)
        return self.local_path_for(uri) if uri else None

    def _model_artifact_uri(self, job: TrainingJobRecord) -> str:
        output_path = job.request["OutputDataConfig"]["S3OutputPath"].rstrip("/")
        return f"{output_path}/{job.name}/output/model.tar.gz"

    def _download_archive(self, uri: str, destination: Path) -> None:
        bucket, key = split_s3_uri(uri)
        body = self._client().get_object(Bucket=bucket, Key=key)["Body"].read()
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as archive:
            archive.extractall(destination, filter="data")

    def _download_prefix(self, uri: str, destination: Path, required: bool = True) -> None:
        bucket, prefix = split_s3_uri(uri)
        destination.mkdir(parents=True, exist_ok=True)
        paginator = self._client().get_paginator("list_objects_v2")
        found = False
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                relative = item["Key"][len(prefix) :].lstrip("/")
                if not relative or item["Key"].endswith("/"):
                    continue
                found = True
                target = destination / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                self._client().download_file(bucket, item["Key"], str(target))
        if not found and required:
            raise ValueError(f"no data found at {uri} (the channel's S3Uri prefix is empty)")

    def _environment(self, job: TrainingJobRecord, debug_dir: Path) -> dict[str, str]:
        hyperparameters = job.hyperparameters
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "SM_", "POWERTOOLS_"))}
        # The request's Environment first: the platform's own variables below win, as SageMaker's reserved
        # ones do. In particular the platform, not the job, carries the debug output to S3 here.
        env.update(job.request.get("Environment", {}))
        user_hyperparameters = {k: v for k, v in hyperparameters.items() if not k.startswith(SAGEMAKER_RESERVED_PREFIX)}
        channels = [channel["ChannelName"] for channel in job.request.get("InputDataConfig", [])]
        checkpoint_uri = job.request.get("CheckpointConfig", {}).get("S3Uri")
        checkpoint_dir = self.local_path_for(checkpoint_uri) if checkpoint_uri else job.job_dir / "checkpoints"
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        env.update(
            {
                "PYTHONUNBUFFERED": "1",
                "PYTHONDONTWRITEBYTECODE": "1",
                "SM_HPS": json.dumps(user_hyperparameters),
                "SM_USER_ARGS": json.dumps(script_mode_arguments(job.request.get("HyperParameters", {}))),
                "SM_MODEL_DIR": str(job.job_dir / "model"),
                "SM_INPUT_DIR": str(job.job_dir / "input"),
                "SM_INPUT_CONFIG_DIR": str(job.job_dir / "input" / "config"),
                "SM_OUTPUT_DIR": str(job.job_dir / "output"),
                "SM_OUTPUT_DATA_DIR": str(job.job_dir / "output" / "data"),
                "SM_CHANNELS": json.dumps(channels),
                "SM_USER_ENTRY_POINT": hyperparameters["sagemaker_program"],
                "SM_MODULE_DIR": hyperparameters["sagemaker_submit_directory"],
                "SM_CURRENT_HOST": "algo-1",
                "SM_HOSTS": json.dumps(["algo-1"]),
                "SM_NUM_CPUS": str(self.num_threads),
                "SM_NUM_GPUS": "0",
                "TRAINING_JOB_NAME": job.name,
                "TRAINING_CHECKPOINT_DIR": str(checkpoint_dir),
                "TRAINING_FAILURE_FILE": str(job.job_dir / "output" / "failure"),
                "DEBUG_OUTPUT_DIR": str(debug_dir),
                "DEBUG_OUTPUT_S3_SYNC": "off",
                "TRAINING_NUM_THREADS": str(self.num_threads),
                "OMP_NUM_THREADS": str(self.num_threads),
                "LOCAL_TRAINING_PLATFORM_PID": str(os.getpid()),
            }
        )
        for channel in channels:
            env[f"SM_CHANNEL_{channel.upper()}"] = str(job.job_dir / "input" / "data" / channel)
        for name, value in user_hyperparameters.items():  # as SageMaker's training toolkit sets them
            env[f"SM_HP_{name.upper()}"] = value
        return env

    def _train(self, job: TrainingJobRecord) -> None:
        hyperparameters = job.hyperparameters
        debug_dir = self.debug_output_dir(job)
        debug_dir.mkdir(parents=True, exist_ok=True)
        program = hyperparameters["sagemaker_program"]
        arguments = script_mode_arguments(job.request.get("HyperParameters", {}))
        env = self._environment(job, debug_dir)
        max_runtime = job.request.get("StoppingCondition", {}).get("MaxRuntimeInSeconds")
        hosts = job.hosts
        launcher = launcher_from_hyperparameters(hyperparameters)
        master_port = free_port() if len(hosts) > 1 or launcher else 0
        threads = max(1, self.num_threads // len(hosts))  # the hosts share this machine's cores
        with job.lock:
            if job.status == STOPPING:  # stopped before the process could start
                self._finish(job, STOPPED, "Stopped")
                return
            self._transition(job, "Training")
            job.training_start = _now()
            started = time.monotonic()
            job.process_started = started
            for host in hosts:
                host_env = {**env, **host_variables(host, hosts, launcher, master_port, threads)}
                host.process = self._start_process(program, arguments, job.job_dir / "code", host_env, host.log_path)
            job.process = hosts[0].process
        group = HostGroup(hosts)
        term_sent_at: float | None = None
        failure_seen_at: float | None = None  # a host failed on its own: its peers get a grace period to end too
        while True:
            group.poll()
            if group.all_ended:
                break
            time.sleep(0.2)
            now = time.monotonic()
            with job.lock:
                if job.stop_reason is None and max_runtime is not None and now - started > max_runtime:
                    self._request_stop(job, "MaxRuntimeExceeded")
                if job.stop_reason is not None and term_sent_at is None:
                    term_sent_at = now
            if failure_seen_at is None and group.first_failure() is not None:
                failure_seen_at = now
            if term_sent_at is None and failure_seen_at is not None and now - failure_seen_at > self.stop_grace_seconds:
                # As SageMaker ends a job when one host's training fails: the peers that did not end are stopped.
                group.signal(signal.SIGTERM)
                term_sent_at = now
            if term_sent_at is not None and now - term_sent_at > self.stop_grace_seconds:
                group.signal(signal.SIGKILL)
        # The entry point may have left children in its groups: they end with the job.
        group.kill()
        failed = group.first_failure()
        exit_code = failed.exit_code if failed is not None else 0
        with job.lock:
            job.exit_code = exit_code
            job.peak_memory_bytes = group.peak_memory_bytes or None
            job.process_ended = time.monotonic()
            job.process_seconds = job.process_ended - started
        self._conclude(job, exit_code, failed or hosts[0])

    def _start_process(
        self, program: str, arguments: list[str], code_dir: Path, env: dict[str, str], log_path: Path
    ) -> subprocess.Popen:
        log = open(log_path, "ab")
        try:
            return subprocess.Popen(
                [self.python, "-c", LAUNCHER, program, *arguments],
                cwd=code_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()

    def _conclude(self, job: TrainingJobRecord, exit_code: int, host: HostProcess) -> None:
        """The job's end from the exit code of ``host``: the first host that failed, else algo-1."""
        with job.lock:
            stop_reason = job.stop_reason
        if stop_reason is None and exit_code < 0:
            # A signal the platform did not send: the kernel's out-of-memory killer (SIGKILL) is the common case.
            killer = signal.Signals(-exit_code)
            with job.lock:
                job.killed_by_signal = killer.name
                peak = format_bytes(job.peak_memory_bytes) if job.peak_memory_bytes else None
            reason = f"{killed_process_failure_text(killer.name, killer.value, peak)}. {self._log_tail(host)}".strip()
            with job.lock:
                job.failure_reason = reason[:1024]
                self._finish(job, FAILED, "Failed", f"Training job failed. Reason: {job.failure_reason}")
            return
        if stop_reason is None and exit_code != 0:
            failure_file = host.failure_file
            reason = failure_file.read_text(errors="replace").strip() if failure_file.exists() else ""
            if not reason:
                reason = f"AlgorithmError: the entry point exited with code {exit_code}. {self._log_tail(host)}".strip()
            if len(job.hosts) > 1:  # several hosts ran: say which one failed first
                reason = f"{reason} (on {host.name})"
            with job.lock:
                job.failure_reason = reason[:1024]
                self._finish(job, FAILED, "Failed", f"Training job failed. Reason: {job.failure_reason}")
            return
        if stop_reason is None:
            with job.lock:
                self._transition(job, "Uploading")
        self._package_model(job)
        self.sync_outputs(job)
        with job.lock:
            if stop_reason is None:
                self._finish(job, COMPLETED, "Completed")
            else:
                self._finish(job, STOPPED, "MaxRuntimeExceeded" if stop_reason == "MaxRuntimeExceeded" else "Stopped")

    def _log_tail(self, host: HostProcess, lines: int = 5) -> str:
        path = host.log_path
        if not path.exists():
            return ""
        tail = path.read_text(errors="replace").strip().splitlines()[-lines:]
        return "Last log lines: " + " | ".join(tail) if tail else ""

    def _package_model(self, job: TrainingJobRecord) -> None:
        model_dir = job.job_dir / "model"

        def write(handle) -> None:
            with tarfile.open(fileobj=handle, mode="w:gz") as archive:
                for path in sorted(model_dir.rglob("*")):
                    if path.is_file():
                        archive.add(path, arcname=path.relative_to(model_dir).as_posix())

        # A dot-named temporary: sync_outputs skips it until the rename.
        write_atomically(self.local_path_for(self._model_artifact_uri(job)), write)

    def sync_outputs(self, job: TrainingJobRecord) -> None:
        """Copy new or changed files of the job's output directories into S3; delete vanished ones."""
        with job.lock:
            outputs = list(job.outputs)
            client = self._client() if outputs else None
            for output in outputs:
                seen = set()
                if output.local_dir.exists():
                    for path in sorted(output.local_dir.rglob("*")):
                        if not path.is_file() or path.name.startswith("."):
                            continue  # dot files are writers' temporaries (atomic writes)
                        key = output.prefix.rstrip("/") + "/" + path.relative_to(output.local_dir).as_posix()
                        key = key.lstrip("/")
                        seen.add(key)
                        try:
                            stat = path.stat()
                            signature = (stat.st_mtime_ns, stat.st_size)
                            if job.synced.get((output.bucket, key)) == signature:
                                continue
                            data = path.read_bytes()
                        except FileNotFoundError:
                            seen.discard(key)
                            continue
                        client.put_object(Bucket=output.bucket, Key=key, Body=data)
                        job.synced[(output.bucket, key)] = signature
                for bucket, key in list(job.synced):
                    if bucket == output.bucket and key.startswith(output.prefix.lstrip("/")) and key not in seen:
                        client.delete_object(Bucket=bucket, Key=key)
                        del job.synced[(bucket, key)]

    def _read_line(self, job: TrainingJobRecord, line: str, definitions: list[dict[str, str]]) -> None:
        now = _now()
        for definition in definitions:
            match = re.search(definition["Regex"], line)
            if match:
                try:
                    value = float(match.group(1))
                except (ValueError, IndexError):
                    continue
                if value == value and value not in (float("inf"), float("-inf")):  # CloudWatch takes finite values only
                    job.metric_values[definition["Name"]] = (value, now)
        parsed = parse_progress_line(line)
        if parsed is None:
            return
        if parsed["kind"] == "training_step":
            job.steps.append(parsed)
        else:
            job.epochs.append(parsed)

    def _describe(self, job: TrainingJobRecord) -> dict[str, Any]:
        request = job.request
        response: dict[str, Any] = {
            "TrainingJobName": job.name,
            "TrainingJobArn": job.arn,
            "ModelArtifacts": {"S3ModelArtifacts": self._model_artifact_uri(job)},
            "TrainingJobStatus": job.status,
            "SecondaryStatus": job.secondary_status,
            "HyperParameters": dict(request.get("HyperParameters", {})),
            "AlgorithmSpecification": dict(request.get("AlgorithmSpecification", {"TrainingInputMode": "File"})),
            "RoleArn": request["RoleArn"],
            **({"InputDataConfig": list(request["InputDataConfig"])} if request.get("InputDataConfig") else {}),
            "OutputDataConfig": dict(request["OutputDataConfig"]),
            "ResourceConfig": dict(request.get("ResourceConfig", {})),
            "StoppingCondition": dict(request.get("StoppingCondition", {"MaxRuntimeInSeconds": 86400})),
            "CreationTime": job.created,
            "LastModifiedTime": job.last_modified or job.created,
            "SecondaryStatusTransitions": [dict(item) for item in job.transitions],
            "FinalMetricDataList": [
                {"MetricName": name, "Value": value, "Timestamp": at}
                for name, (value, at) in sorted(job.metric_values.items())
            ],
            "EnableNetworkIsolation": bool(request.get("EnableNetworkIsolation", False)),
            "EnableInterContainerTrafficEncryption": bool(request.get("EnableInterContainerTrafficEncryption", False)),
            "EnableManagedSpotTraining": bool(request.get("EnableManagedSpotTraining", False)),
        }
        if job.failure_reason:
            response["FailureReason"] = job.failure_reason
        if job.training_start:
            response["TrainingStartTime"] = job.training_start
        if job.training_end:
            response["TrainingEndTime"] = job.training_end
            seconds = max(1, int(round((job.training_end - (job.training_start or job.created)).total_seconds())))
            response["TrainingTimeInSeconds"] = seconds
            response["BillableTimeInSeconds"] = seconds
        for key in (
            "CheckpointConfig",
            "DebugHookConfig",
            "DebugRuleConfigurations",
            "Environment",
            "RetryStrategy",
            "TensorBoardOutputConfig",
        ):
            if key in request:
                response[key] = request[key]
        if "DebugRuleConfigurations" in request:
            response["DebugRuleEvaluationStatuses"] = self._rule_evaluation_statuses(job)
        return response

    def _rule_evaluation_statuses(self, job: TrainingJobRecord) -> list[dict[str, Any]]:
        """Legacy mode: SageMaker's rule-job statuses, answered from the in-job debugger's rule-status.json."""
        document: dict[str, Any] = {}
        if job.debug_output_uri:
            path = self.local_path_for(job.debug_output_uri) / RULE_STATUS_FILE
            try:
                document = json.loads(path.read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                document = {}
        by_name = {
            rule.get("RuleConfigurationName"): rule for rule in document.get("rules", []) if isinstance(rule, dict)
        }
        statuses = []
        for rule in job.request["DebugRuleConfigurations"]:
            name = rule["RuleConfigurationName"]
            found = by_name.get(name, {})
            status = found.get("RuleEvaluationStatus") or ("NoIssuesFound" if job.ended else "InProgress")
            statuses.append(
                {
                    "RuleConfigurationName": name,
                    "RuleEvaluationJobArn": f"arn:aws:sagemaker:{self.region}:{ACCOUNT_ID}:processing-job/{job.name[:26].lower()}-{name[:26].lower()}",
                    "RuleEvaluationStatus": status,
                    "StatusDetails": found.get("StatusDetails", ""),
                    "LastModifiedTime": job.last_modified or job.created,
                }
            )
        return statuses


def _write_json(path: Path, value: Any) -> None:
    write_atomically(path, lambda handle: json.dump(value, handle, indent=2), mode="w")
