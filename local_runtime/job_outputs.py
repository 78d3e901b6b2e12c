"""What a local job leaves in S3, as SageMaker's uploads would: its checkpoints, debug output, TensorBoard event files
and model.tar.gz. The job writes them under the bucket mirror; :func:`sync_outputs` copies what is new or changed
into S3 (on every Describe and when the job ends) and deletes what vanished."""

from __future__ import annotations

import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contracts.atomic_files import write_atomically
from contracts.bucket_layout import split_s3_uri
from local_runtime.training_job import BucketMirror, OutputLocation, TrainingJobRecord


def output_locations(job: TrainingJobRecord, mirror: BucketMirror) -> list[OutputLocation]:
    """Checkpoints, debug output, the model artifact's folder and TensorBoard's: local directories mirrored to S3
    (a file two of them hold, TensorBoard's inside the debug output, is put once: the sync keys by S3 key)."""
    uris = (
        job.checkpoint_uri,
        job.debug_output_uri,
        job.model_artifact_uri.rsplit("/", 1)[0] + "/",
        job.tensorboard_uri,
    )
    return [OutputLocation(mirror.local_path(uri), *split_s3_uri(uri)) for uri in uris if uri]


def tensorboard_dir(job: TrainingJobRecord, mirror: BucketMirror) -> Path | None:
    """The job's TensorBoard LocalPath here: its S3 destination's local mirror, as for the other outputs (so a run
    directory's buckets/ hold every job's event files where S3 would, for one ``tensorboard --logdir``)."""
    uri = job.tensorboard_uri
    return mirror.local_path(uri) if uri else None


def package_model(job: TrainingJobRecord, mirror: BucketMirror) -> None:
    """model.tar.gz of the job's model directory, at its artifact's place in the mirror."""
    model_dir = job.job_dir / "model"

    def write(handle) -> None:
        with tarfile.open(fileobj=handle, mode="w:gz") as archive:
            for path in sorted(model_dir.rglob("*")):
                if path.is_file():
                    archive.add(path, arcname=path.relative_to(model_dir).as_posix())

    # A dot-named temporary: sync_outputs skips it until the rename.
    write_atomically(mirror.local_path(job.model_artifact_uri), write)


def sync_outputs(job: TrainingJobRecord, s3: Callable[[], Any]) -> None:
    """Copy new or changed files of the job's output directories into S3; delete vanished ones. ``s3`` gives the S3
    client (asked only when there is something to copy or delete)."""
    with job.lock:
        outputs = list(job.outputs)
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
                    s3().put_object(Bucket=output.bucket, Key=key, Body=data)
                    job.synced[(output.bucket, key)] = signature
            for bucket, key in list(job.synced):
                if bucket == output.bucket and key.startswith(output.prefix.lstrip("/")) and key not in seen:
                    s3().delete_object(Bucket=bucket, Key=key)
                    del job.synced[(bucket, key)]
