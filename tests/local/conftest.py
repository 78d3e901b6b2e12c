from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import boto3
import numpy as np
import pytest
from moto import mock_aws

from contracts import bucket_layout
from local_runtime.botocore_dispatch import LocalDispatch
from local_runtime.sagemaker_api import register_training_api
from local_runtime.training_platform import LocalTrainingPlatform

FIXTURE_JOB = Path(__file__).parent / "fixtures" / "contract_job" / "train.py"
BUCKET = "platform-test-bucket"
REGION = "us-east-1"


def _fixture_archive() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(FIXTURE_JOB, arcname="train.py")
    return buffer.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.fixture
def platform_env(tmp_path, monkeypatch, offline_aws_credentials):
    """moto S3 with the fixture's source archive and two channels; the platform behind the SageMaker API."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key=bucket_layout.SOURCE_ARCHIVE_KEY, Body=_fixture_archive())
        for prefix, count in ((bucket_layout.TRAIN_CHANNEL_PREFIX, 8), (bucket_layout.TEST_CHANNEL_PREFIX, 4)):
            s3.put_object(Bucket=BUCKET, Key=f"{prefix}x.npy", Body=_npy(np.zeros((count, 32, 32, 3), np.uint8)))
            s3.put_object(Bucket=BUCKET, Key=f"{prefix}y.npy", Body=_npy(np.zeros(count, np.int64)))
        platform = LocalTrainingPlatform(
            tmp_path / "platform", lambda: boto3.client("s3", region_name=REGION), num_threads=1, stop_grace_seconds=1.5
        )
        dispatch = LocalDispatch()
        register_training_api(dispatch, platform)
        with dispatch:
            try:
                yield platform, boto3.client("sagemaker", region_name=REGION), s3
            finally:
                platform.shutdown()


def process_alive(pid: int) -> bool:
    """True if /proc shows the process and it is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def processes_in_group(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found
