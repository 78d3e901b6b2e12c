"""Resume from a failed job's checkpoints: copy them into the next job's checkpoint prefix before it launches.

SageMaker copies a job's ``CheckpointConfig.S3Uri`` into its ``LocalPath`` (/opt/ml/checkpoints) when the job
starts, and a script written for checkpointing resumes from what it finds there (spot training's contract). So a
remedy that allows it (``"resume": true``: a learning rate, regularisation, early stopping; not an architecture
change) makes the next job continue where the last one stopped, not from step 0: the train Lambda copies the
last job's checkpoint prefix to the next job's with server-side copies (the prefixes are the jobs' own:
``job_identity.evidence_prefixes``). Copying is idempotent (a file already there with the same size, copied after
the source was last written, is not copied again: a multipart object's ETag is not its copy's, so ETags alone would
copy it again at every try), so a retried task goes on where the last try stopped and launches once. A file larger
than COPY_PART_BYTES is copied in parts (UploadPartCopy), each a request that answers in seconds, so no read waits
minutes on one large copy.

Checkpoints that cannot be carried over (more files than a checkpoint directory keeps, a file larger than one
CopyObject copies, or more bytes than the Lambda can copy before its deadline) never fail the run: the next job
starts from step 0 (its checkpoint prefix emptied of any partial copy first, so it cannot resume from half a
checkpoint), and the attempt says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from boto3.s3.transfer import TransferConfig

from contracts import bucket_layout, time_budgets

#: More files than a checkpointing script keeps (ours keep two or three) means something else is in the prefix;
#: a job never waits on a copy this large.
MAX_CHECKPOINT_FILES = 200
#: A file up to this size is copied by one CopyObject; a larger one in parts of this size (a part at the planned rate
#: takes seconds, far inside the copy client's read timeout). Multipart copies also take files over CopyObject's 5 GB.
COPY_PART_BYTES = 256 * 1024**2
#: The managed multipart copy, on the calling thread: each part's request then meets the invocation's deadline.
MULTIPART_COPY = TransferConfig(
    multipart_threshold=COPY_PART_BYTES + 1, multipart_chunksize=COPY_PART_BYTES, use_threads=False
)
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
    *,
    source_prefix: str | None = None,
    target_prefix: str | None = None,
) -> Resumed:
    """Carry ``from_job``'s checkpoints over to ``to_job`` within the time ``seconds_left()`` reports (less the
    launch's own reserve), or empty ``to_job``'s prefix and say why it starts from step 0. Transient S3 errors
    are raised (the task is retried and the copy goes on where it stopped). The prefixes default to the jobs' names
    alone (``checkpoints/<job>/``)."""

    def copy_budget() -> float | None:
        left = seconds_left()
        return None if left is None else left - time_budgets.LAUNCH_RESERVE_SECONDS

    target_prefix = target_prefix or bucket_layout.checkpoint_prefix(to_job)
    try:
        copied = copy_checkpoints(
            s3,
            bucket,
            from_job,
            to_job,
            copy_client=copy_s3,
            budget=copy_budget,
            source_prefix=source_prefix,
            target_prefix=target_prefix,
        )
        return Resumed(from_job, copied)
    except CheckpointCopyError as error:
        removed = clear_checkpoints(s3, bucket, to_job, prefix=target_prefix)
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
    source_prefix: str | None = None,
    target_prefix: str | None = None,
) -> CopiedCheckpoints:
    """Copy every object under ``from_job``'s checkpoint prefix to ``to_job``'s (0 files: it left none).

    ``budget()`` is the seconds left for copying (None: no limit); a copy that would not finish in it (planned at
    :data:`ASSUMED_COPY_BYTES_PER_SECOND`, checked again before each file) raises CheckpointCopyError."""
    source_prefix = source_prefix or bucket_layout.checkpoint_prefix(from_job)
    target_prefix = target_prefix or bucket_layout.checkpoint_prefix(to_job)
    objects = _list(s3, bucket, source_prefix, limit=MAX_CHECKPOINT_FILES)
    if objects is None:
        raise CheckpointCopyError(
            f"s3://{bucket}/{source_prefix} holds more than {MAX_CHECKPOINT_FILES} files; a checkpoint "
            "directory keeps a few: not resuming from it"
        )
    already = {item["Key"][len(target_prefix) :]: item for item in _list(s3, bucket, target_prefix, limit=None) or []}
    to_copy = [item for item in objects if not already_copied(item, already.get(item["Key"][len(source_prefix) :]))]
    _check_time(sum(item["Size"] for item in to_copy), budget, f"copying {len(to_copy)} checkpoint file(s)")
    client = copy_client or s3
    for item in to_copy:
        _check_time(item["Size"], budget, f"copying s3://{bucket}/{item['Key']}")
        target_key = target_prefix + item["Key"][len(source_prefix) :]
        source = {"Bucket": bucket, "Key": item["Key"]}
        if item["Size"] <= COPY_PART_BYTES:
            client.copy_object(Bucket=bucket, Key=target_key, CopySource=source)
        else:
            client.copy(source, bucket, target_key, Config=MULTIPART_COPY)
    return CopiedCheckpoints(from_job, to_job, files=len(objects), bytes=sum(item["Size"] for item in objects))


def already_copied(source: dict[str, Any], target: dict[str, Any] | None) -> bool:
    """Whether ``target`` (a listing's entry) is a finished copy of ``source``: the same size, and the same ETag or
    written at or after the source's last write (a copy is written whole or not at all, and a multipart source's
    ETag, or a multipart copy's, is not the other's)."""
    if target is None or target["Size"] != source["Size"]:
        return False
    if source.get("ETag") and source.get("ETag") == target.get("ETag"):
        return True
    written, copied = source.get("LastModified"), target.get("LastModified")
    return written is not None and copied is not None and copied >= written


def clear_checkpoints(s3: Any, bucket: str, job_name: str, prefix: str | None = None) -> int:
    """Delete every object under ``job_name``'s checkpoint prefix (a partial copy); returns how many."""
    prefix = prefix or bucket_layout.checkpoint_prefix(job_name)
    keys = [item["Key"] for item in _list(s3, bucket, prefix, limit=None) or []]
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
