"""Resume from a failed job's checkpoints: copy them into the next job's checkpoint prefix before it launches.

SageMaker copies a job's ``CheckpointConfig.S3Uri`` into its ``LocalPath`` (/opt/ml/checkpoints) when the job
starts, and a script written for checkpointing resumes from what it finds there (spot training's contract). So a
remedy that allows it (``"resume": true``: a learning rate, regularisation, early stopping; not an architecture
change) makes the next job continue where the last one stopped, not from step 0: the train Lambda copies the
last job's ``checkpoints/<job>/`` objects to ``checkpoints/<next job>/`` with server-side CopyObject. Copying is
idempotent, so a retried task copies again and launches once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from contracts import bucket_layout

#: More files than a checkpointing script keeps (ours keep two or three) means something else is in the prefix;
#: a job never waits on a copy this large.
MAX_CHECKPOINT_FILES = 200
#: CopyObject copies up to 5 GB in one request; a larger checkpoint file would need a multipart copy.
MAX_CHECKPOINT_FILE_BYTES = 5 * 1024**3


class CheckpointCopyError(RuntimeError):
    """The checkpoints cannot be carried over; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class CopiedCheckpoints:
    from_job: str
    to_job: str
    files: int
    bytes: int


def copy_checkpoints(s3: Any, bucket: str, from_job: str, to_job: str) -> CopiedCheckpoints:
    """Copy every object under ``from_job``'s checkpoint prefix to ``to_job``'s (0 files: it left none)."""
    source_prefix = bucket_layout.checkpoint_prefix(from_job)
    target_prefix = bucket_layout.checkpoint_prefix(to_job)
    objects = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=source_prefix):
        for item in page.get("Contents", []):
            if item["Key"].endswith("/"):
                continue
            objects.append(item)
            if len(objects) > MAX_CHECKPOINT_FILES:
                raise CheckpointCopyError(
                    f"s3://{bucket}/{source_prefix} holds more than {MAX_CHECKPOINT_FILES} files; a checkpoint "
                    "directory keeps a few: not resuming from it"
                )
    too_large = [item["Key"] for item in objects if item["Size"] > MAX_CHECKPOINT_FILE_BYTES]
    if too_large:
        raise CheckpointCopyError(
            f"s3://{bucket}/{too_large[0]} is larger than 5 GB, the most one CopyObject copies: not resuming from it"
        )
    for item in objects:
        relative = item["Key"][len(source_prefix) :]
        s3.copy_object(
            Bucket=bucket,
            Key=target_prefix + relative,
            CopySource={"Bucket": bucket, "Key": item["Key"]},
        )
    return CopiedCheckpoints(from_job, to_job, files=len(objects), bytes=sum(item["Size"] for item in objects))
