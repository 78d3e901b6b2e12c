"""What `remediate cloud` puts in the artifacts bucket: training sources, the example's data, staged inputs."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contracts import bucket_layout
from remediate.aws_access import CloudCommandError, aws_call
from remediate.example_tools import ExampleToolError, convert_cifar10_archive, generate_synthetic_channels
from remediate.packaging import SourceDirError, build_builtin_example_archive, build_source_archive, check_source_dir
from remediate.staging import StagedUpload, StagingError, plan_staging


def upload_file(session, bucket: str, key: str, path: Path) -> str:
    uri = bucket_layout.s3_uri(bucket, key)
    aws_call(f"upload to {uri}", session.client("s3").upload_file, str(path), bucket, key)
    return uri


def check_local_source(source_dir: Path, entry_point: str) -> Path:
    try:
        return check_source_dir(source_dir, entry_point, field="--source-dir")
    except SourceDirError as error:
        raise CloudCommandError(str(error)) from None


def upload_source(session, outputs, source_dir: Path | None = None, entry_point: str | None = None) -> str:
    """The built-in example to the default key, or a user's directory under its content-addressed key."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="remediate-source-") as scratch:
        if source_dir is None:
            archive = build_builtin_example_archive(Path(scratch) / "sourcedir.tar.gz")
            key = bucket_layout.SOURCE_ARCHIVE_KEY
        else:
            archive = build_source_archive(Path(scratch) / "sourcedir.tar.gz", check_local_source(source_dir, entry_point), entry_point)
            key = bucket_layout.user_source_archive_key(archive.label, archive.digest)
        return upload_file(session, outputs.bucket, key, archive.path)


def stage_locally(
    run_spec: Mapping[str, Any], work_dir: Path, base_dir: Path, bucket: str
) -> tuple[dict[str, Any], list[StagedUpload]]:
    """The run_spec with its local directories packed for ``bucket`` (the built-in example's source is
    `upload-source`'s job in the cloud: not staged here)."""
    planned_input = {"bucket": bucket, **dict(run_spec)}  # a run_spec's own bucket is checked against the stack
    try:
        staged, uploads = plan_staging(planned_input, work_dir, base_dir)
    except StagingError as error:
        raise CloudCommandError(str(error)) from None
    example_source = bucket_layout.SOURCE_ARCHIVE_KEY
    uploads = [item for item in uploads if item.key != example_source]
    staged = {key: value for key, value in staged.items() if key != "bucket" or "bucket" in run_spec}
    return staged, uploads


def prepare_example_channels(arguments: argparse.Namespace, out_dir: Path) -> dict[str, Path]:
    try:
        if arguments.cifar10_archive:
            return convert_cifar10_archive(arguments.cifar10_archive, out_dir)
        return generate_synthetic_channels(
            out_dir, train_samples=arguments.train_samples, test_samples=arguments.test_samples, seed=arguments.seed
        )
    except ExampleToolError as error:
        raise CloudCommandError(f"prepare-data: {error}") from None


def upload_example_channels(session, outputs, channels: Mapping[str, Path]) -> list[str]:
    uploaded = []
    for channel, prefix in bucket_layout.CHANNEL_PREFIXES.items():
        for path in sorted(Path(channels[channel]).iterdir()):
            if path.is_file():
                uploaded.append(upload_file(session, outputs.bucket, prefix + path.name, path))
    return uploaded


__all__ = [
    "check_local_source",
    "prepare_example_channels",
    "stage_locally",
    "upload_example_channels",
    "upload_file",
    "upload_source",
]
