"""Resume from a failed job's checkpoints: copy them into the next job's checkpoint prefix before it launches.

SageMaker copies a job's ``CheckpointConfig.S3Uri`` into its ``LocalPath`` (/opt/ml/checkpoints) when the job
starts, and a script written for checkpointing resumes from what it finds there (spot training's contract). So a
remedy that allows it (``"resume": true``: a learning rate, regularisation, early stopping; not an architecture
change) makes the next job continue where the last one stopped, not from step 0: the train Lambda copies the
last job's ``checkpoints/<job>/`` objects to ``checkpoints/<next job>/`` with server-side CopyObject. Copying is
idempotent (a file already copied with the same size and ETag is not copied again), so a retried task goes on
where the last try stopped and launches once.

Checkpoints that cannot be carried over (more files than a checkpoint directory keeps, a file larger than one
CopyObject copies, or more bytes than the Lambda can copy before its deadline) never fail the run: the next job
starts from step 0 (its checkpoint prefix emptied of any partial copy first, so it cannot resume from half a
checkpoint), and the attempt says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from contracts import bucket_layout, time_budgets

#: More files than a checkpointing script keeps (ours keep two or three) means something else is in the prefix;
#: a job never waits on a copy this large.
MAX_CHECKPOINT_FILES = 200
#: CopyObject copies up to 5 GB in one request; a larger checkpoint file would need a multipart copy.
MAX_CHECKPOINT_FILE_BYTES = 5 * 1024**3
#: A floor for S3's server-side copy rate within a bucket (it is usually far faster): what a copy is planned with.
ASSUMED_COPY_BYTES_PER_SECOND = 50 * 1024**2
#: A CopyObject answers when its copy is done: its client reads that long.
COPY_READ_SECONDS = time_budgets.COPY_READ_SECONDS


class CheckpointCopyError(RuntimeError):
    """The checkpoints cannot be carried over; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class CopiedCheckpoints:
    from_job: str
    to_job: str
    files: int
    bytes: int


@dataclasses.dataclass(frozen=True)
class Resumed:
    """What the launch starts from: ``copied`` checkpoints of ``from_job``, or (``skipped``: why not) step 0."""

    from_job: str | None = None
    copied: CopiedCheckpoints | None = None
    skipped: str | None = None


def resume_or_start_over(
    s3: Any,
    copy_s3: Any,
    bucket: str,
    from_job: str,
    to_job: str,
    seconds_left: Callable[[], float | None] = lambda: None,
) -> Resumed:
    """Carry ``from_job``'s checkpoints over to ``to_job`` within the time ``seconds_left()`` reports (less the
    launch's own reserve), or empty ``to_job``'s prefix and say why it starts from step 0. Transient S3 errors
    are raised (the task is retried and the copy goes on where it stopped)."""

    def copy_budget() -> float | None:
        left = seconds_left()
        return None if left is None else left - time_budgets.LAUNCH_RESERVE_SECONDS

    try:
        return Resumed(from_job, copy_checkpoints(s3, bucket, from_job, to_job, copy_client=copy_s3, budget=copy_budget))
    except CheckpointCopyError as error:
        removed = clear_checkpoints(s3, bucket, to_job)
        partial = f" ({removed} file(s) already copied were removed)" if removed else ""
        return Resumed(from_job, None, skipped=f"{error}{partial}; the job starts from step 0")


def copy_checkpoints(
    s3: Any,
    bucket: str,
    from_job: str,
    to_job: str,
    *,
    copy_client: Any = None,
    budget: Callable[[], float | None] = lambda: None,
) -> CopiedCheckpoints:
    """Copy every object under ``from_job``'s checkpoint prefix to ``to_job``'s (0 files: it left none).

    ``budget()`` is the seconds left for copying (None: no limit); a copy that would not finish in it (planned at
    :data:`ASSUMED_COPY_BYTES_PER_SECOND`, checked again before each file) raises CheckpointCopyError."""
    source_prefix = bucket_layout.checkpoint_prefix(from_job)
    target_prefix = bucket_layout.checkpoint_prefix(to_job)
    objects = _list(s3, bucket, source_prefix, limit=MAX_CHECKPOINT_FILES)
    if objects is None:
        raise CheckpointCopyError(
            f"s3://{bucket}/{source_prefix} holds more than {MAX_CHECKPOINT_FILES} files; a checkpoint "
            "directory keeps a few: not resuming from it"
        )
    too_large = [item["Key"] for item in objects if item["Size"] > MAX_CHECKPOINT_FILE_BYTES]
    if too_large:
        raise CheckpointCopyError(
            f"s3://{bucket}/{too_large[0]} is larger than 5 GB, the most one CopyObject copies: not resuming from it"
        )
    already = {
        item["Key"][len(target_prefix) :]: (item["Size"], item.get("ETag"))
        for item in _list(s3, bucket, target_prefix, limit=None) or []
    }
    to_copy = [
        item
        for item in objects
        if already.get(item["Key"][len(source_prefix) :]) != (item["Size"], item.get("ETag"))
    ]
    _check_time(sum(item["Size"] for item in to_copy), budget, f"copying {len(to_copy)} checkpoint file(s)")
    for item in to_copy:
        _check_time(item["Size"], budget, f"copying s3://{bucket}/{item['Key']}")
        (copy_client or s3).copy_object(
            Bucket=bucket,
            Key=target_prefix + item["Key"][len(source_prefix) :],
            CopySource={"Bucket": bucket, "Key": item["Key"]},
        )
    return CopiedCheckpoints(from_job, to_job, files=len(objects), bytes=sum(item["Size"] for item in objects))


def clear_checkpoints(s3: Any, bucket: str, job_name: str) -> int:
    """Delete every object under ``job_name``'s checkpoint prefix (a partial copy); returns how many."""
    keys = [item["Key"] for item in _list(s3, bucket, bucket_layout.checkpoint_prefix(job_name), limit=None) or []]
    for start in range(0, len(keys), 1000):
        s3.delete_objects(
            Bucket=bucket, Delete={"Objects": [{"Key": key} for key in keys[start : start + 1000]], "Quiet": True}
        )
    return len(keys)


def _list(s3: Any, bucket: str, prefix: str, limit: int | None) -> list[dict[str, Any]] | None:
    """The objects under ``prefix`` (folder markers left out); None when there are more than ``limit``."""
    objects = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if item["Key"].endswith("/"):
                continue
            objects.append(item)
            if limit is not None and len(objects) > limit:
                return None
    return objects


def _check_time(size: int, budget: Callable[[], float | None], what: str) -> None:
    left = budget()
    if left is None:
        return
    needed = size / ASSUMED_COPY_BYTES_PER_SECOND
    if needed >= left:
        raise CheckpointCopyError(
            f"{what} ({size:,} bytes) needs about {needed:.0f} s at {ASSUMED_COPY_BYTES_PER_SECOND // 1024**2} MB/s "
            f"but the train Lambda has {max(left, 0):.0f} s left for it: not resuming"
        )
