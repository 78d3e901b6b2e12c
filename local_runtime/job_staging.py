"""What a local job finds when its script starts: SageMaker's container contract mapped to one job folder.

* ``input/config``: hyperparameters.json, inputdataconfig.json, TensorBoard's config file when the request has a
  TensorBoardOutputConfig, and each host's resourceconfig.json;
* ``input/data/<channel>``: each channel's S3 prefix, downloaded;
* ``code``: the ``sagemaker_submit_directory`` archive, extracted;
* the checkpoint directory: what the CheckpointConfig's S3Uri already holds, restored before the script starts and
  again when the job restarts after a spot interruption (:func:`restore_checkpoints`), and ``checkpointconfig.json``
  naming it (as SageMaker writes it for a job with a CheckpointConfig; smdebug's hook keeps its spot-resume state
  there);
* the environment: SageMaker's training toolkit's variables (``SM_*``) and ours (``contracts.job``);
* SageMaker's paths themselves (``/opt/ml/checkpoints``, ``/opt/ml/model``, ...), each the job's folder for it, in
  the job's process where the kernel allows (:func:`opt_ml_variables`, ``local_runtime.opt_ml_view``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contracts.atomic_files import write_atomically
from contracts.bucket_layout import split_s3_uri
from contracts.job import (
    CHECKPOINT_CONFIG_FILE,
    CHECKPOINT_CONFIG_FILE_ENV,
    SAGEMAKER_RESERVED_PREFIX,
    TENSORBOARD_CONFIG_FILE,
    script_mode_arguments,
)
from local_runtime.framework_images import local_stand_in
from local_runtime.job_hosts import LOG_FILE, prepare_host_directories
from local_runtime.job_outputs import tensorboard_dir
from local_runtime.opt_ml_view import MOUNTS_ENV, STAGING_ENV, opt_ml_mounts
from local_runtime.training_job import BucketMirror, TrainingJobRecord

#: The empty folder, in each host's folder, that the job's own /opt is built in (inside its mount namespace only).
OPT_VIEW_STAGING = ".opt-view"


def _write_json(path: Path, value: Any) -> None:
    write_atomically(path, lambda handle: json.dump(value, handle, indent=2), mode="w")


def checkpoint_dir(job: TrainingJobRecord, mirror: BucketMirror) -> Path:
    """The job's checkpoint directory: its CheckpointConfig S3Uri's local mirror, else ``checkpoints`` in its folder."""
    uri = job.checkpoint_uri
    return mirror.local_path(uri) if uri else job.job_dir / "checkpoints"


def stage_inputs(job: TrainingJobRecord, mirror: BucketMirror, s3: Callable[[], Any]) -> None:
    """Write the job's config files and bring its code, channels and checkpoints from S3 (``s3`` gives the client).
    Raises ValueError for a channel the local platform cannot read."""
    request = job.request
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
        _write_json(
            config_dir / TENSORBOARD_CONFIG_FILE, {**tensorboard, "LocalPath": str(tensorboard_dir(job, mirror))}
        )
    if job.checkpoint_uri:  # as SageMaker: LocalPath is where this job's checkpoint directory is (see checkpoint_dir)
        _write_json(
            config_dir / CHECKPOINT_CONFIG_FILE,
            {**request["CheckpointConfig"], "LocalPath": str(checkpoint_dir(job, mirror))},
        )
    prepare_host_directories(job.hosts, config_dir)  # each host's resourceconfig.json (current_host, hosts)
    _download_archive(s3, job.hyperparameters["sagemaker_submit_directory"], job.job_dir / "code")
    for channel in request.get("InputDataConfig", []):
        source = channel.get("DataSource", {}).get("S3DataSource")
        if source is None:
            raise ValueError(f"channel {channel['ChannelName']!r}: only S3DataSource is supported locally")
        if source.get("S3DataType", "S3Prefix") != "S3Prefix":
            raise ValueError(f"channel {channel['ChannelName']!r}: only S3DataType S3Prefix is supported locally")
        _download_prefix(s3, source["S3Uri"], job.job_dir / "input" / "data" / channel["ChannelName"])
    # As SageMaker does: what the checkpoint S3Uri already holds (a resumed job's carried-over checkpoints)
    # is in the checkpoint directory before the script starts.
    if job.checkpoint_uri:
        _download_prefix(s3, job.checkpoint_uri, checkpoint_dir(job, mirror), required=False)
    # The image would bring the framework; here this machine's Python does: say which release stands in for it.
    stand_in = local_stand_in(request.get("AlgorithmSpecification", {}).get("TrainingImage", ""))
    with open(job.job_dir / LOG_FILE, "a", encoding="utf-8") as log:
        log.write(stand_in + "\n")


def restore_checkpoints(job: TrainingJobRecord, mirror: BucketMirror, s3: Callable[[], Any]) -> int:
    """A restarted job's new instance: its checkpoint directory holds what the checkpoint S3Uri holds, nothing of the
    reclaimed instance's disk. Returns how many files were restored. The caller has copied what the job wrote into S3
    (as SageMaker's upload of the checkpoint directory would have) and holds ``job.lock``, so no copy into S3 runs
    while the directory is being replaced."""
    directory = checkpoint_dir(job, mirror)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    if job.checkpoint_uri:  # else the new instance's checkpoint directory is empty: the job starts over
        _download_prefix(s3, job.checkpoint_uri, directory, required=False)
    return sum(1 for path in directory.rglob("*") if path.is_file())


def environment(
    job: TrainingJobRecord, mirror: BucketMirror, debug_dir: Path, num_threads: int, platform_pid: int
) -> dict[str, str]:
    """The job's environment (algo-1's; ``job_hosts.host_variables`` adds what differs per host)."""
    hyperparameters = job.hyperparameters
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "SM_", "POWERTOOLS_"))}
    # The request's Environment first: the platform's own variables below win, as SageMaker's reserved
    # ones do. In particular the platform, not the job, carries the debug output to S3 here.
    env.update(job.request.get("Environment", {}))
    user_hyperparameters = {k: v for k, v in hyperparameters.items() if not k.startswith(SAGEMAKER_RESERVED_PREFIX)}
    channels = [channel["ChannelName"] for channel in job.request.get("InputDataConfig", [])]
    checkpoints = checkpoint_dir(job, mirror)
    checkpoints.mkdir(parents=True, exist_ok=True)
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
            "SM_NUM_CPUS": str(num_threads),
            "SM_NUM_GPUS": "0",
            "TRAINING_JOB_NAME": job.name,
            "TRAINING_CHECKPOINT_DIR": str(checkpoints),
            "TRAINING_FAILURE_FILE": str(job.job_dir / "output" / "failure"),
            "DEBUG_OUTPUT_DIR": str(debug_dir),
            "DEBUG_OUTPUT_S3_SYNC": "off",
            "TRAINING_NUM_THREADS": str(num_threads),
            "OMP_NUM_THREADS": str(num_threads),
            "LOCAL_TRAINING_PLATFORM_PID": str(platform_pid),
        }
    )
    if job.checkpoint_uri:  # where the hook finds the checkpoint directory (not /opt/ml/input/config here)
        env[CHECKPOINT_CONFIG_FILE_ENV] = str(job.job_dir / "input" / "config" / CHECKPOINT_CONFIG_FILE)
    for channel in channels:
        env[f"SM_CHANNEL_{channel.upper()}"] = str(job.job_dir / "input" / "data" / channel)
    for name, value in user_hyperparameters.items():  # as SageMaker's training toolkit sets them
        env[f"SM_HP_{name.upper()}"] = value
    return env


def opt_ml_variables(job: TrainingJobRecord, mirror: BucketMirror, host_dir: Path) -> dict[str, str]:
    """What the launcher needs to make SageMaker's /opt/ml paths this host's folders (``local_runtime.opt_ml_view``):
    the paths and an empty folder to build the view in."""
    staging = host_dir / OPT_VIEW_STAGING
    staging.mkdir(parents=True, exist_ok=True)
    mounts = opt_ml_mounts(job.job_dir, host_dir, checkpoint_dir(job, mirror))
    return {MOUNTS_ENV: json.dumps(mounts), STAGING_ENV: str(staging)}


def _download_archive(s3: Callable[[], Any], uri: str, destination: Path) -> None:
    bucket, key = split_s3_uri(uri)
    body = s3().get_object(Bucket=bucket, Key=key)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as archive:
        archive.extractall(destination, filter="data")


def _download_prefix(s3: Callable[[], Any], uri: str, destination: Path, required: bool = True) -> None:
    bucket, prefix = split_s3_uri(uri)
    destination.mkdir(parents=True, exist_ok=True)
    paginator = s3().get_paginator("list_objects_v2")
    found = False
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) :].lstrip("/")
            if not relative or item["Key"].endswith("/"):
                continue
            found = True
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            s3().download_file(bucket, item["Key"], str(target))
    if not found and required:
        raise ValueError(f"no data found at {uri} (the channel's S3Uri prefix is empty)")
