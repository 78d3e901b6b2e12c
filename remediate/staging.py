"""Local inputs of a run_spec, staged in the artifacts bucket: what `local run` and `cloud start` share.

A run_spec file may name local directories where the workflow needs S3 URIs:
``source_dir`` (the training script's directory: packed with the debugger into
a sourcedir.tar.gz) and ``channels`` (data directories). :func:`stage_inputs`
uploads each under a content-addressed key (``contracts.bucket_layout``) and
returns the execution input with their s3:// URIs. Relative paths are relative
to the run_spec file's directory (or the working directory for command-line
options). Nothing is uploaded until every local path has been checked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contracts import bucket_layout
from remediate.example_tools import CHANNELS, ExampleToolError, check_channels
from remediate.packaging import SourceDirError, build_builtin_example_archive, build_source_archive, check_source_dir

#: upload(local file, key in the artifacts bucket)
Uploader = Callable[[Path, str], None]


class StagingError(ValueError):
    """A local input is missing or unusable; the message names the field, the path and the fix."""


@dataclass(frozen=True)
class StagedUpload:
    local_path: Path
    key: str


def is_s3_uri(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("s3://")


def plan_staging(
    execution_input: Mapping[str, Any],
    work_dir: Path,
    base_dir: Path,
    channel_labels: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], list[StagedUpload]]:
    """(the execution input with S3 URIs, the uploads to make). Packs the source archive into ``work_dir``.

    With neither ``source_dir`` nor ``entry_point`` the run is the built-in example: its source is packed to
    the bucket's default key, as ``remediate cloud upload-source`` does, and its local channels are checked by
    the example's own tool (shapes, dtypes, lengths, labels; a user's script checks its own data).
    ``channel_labels`` names where a channel came from in messages (default ``channels.<name>``).
    """
    bucket = execution_input["bucket"]
    staged = dict(execution_input)
    uploads: list[StagedUpload] = []
    source_dir = execution_input.get("source_dir")
    entry_point = execution_input.get("entry_point")
    if source_dir is None and entry_point is None:
        archive = build_builtin_example_archive(work_dir / "builtin-example" / "sourcedir.tar.gz")
        uploads.append(StagedUpload(archive.path, bucket_layout.SOURCE_ARCHIVE_KEY))
    elif source_dir is not None and not is_s3_uri(source_dir):
        if not isinstance(source_dir, str):
            raise StagingError(f"source_dir: must be a directory path or an s3:// URI (got {source_dir!r})")
        if not isinstance(entry_point, str):
            raise StagingError("entry_point: is required with source_dir: the script to run, e.g. train.py")
        try:
            directory = check_source_dir(_resolve(source_dir, base_dir), entry_point)
        except SourceDirError as error:
            raise StagingError(str(error)) from None
        archive = build_source_archive(work_dir / "source" / "sourcedir.tar.gz", directory, entry_point)
        key = bucket_layout.user_source_archive_key(archive.label, archive.digest)
        uploads.append(StagedUpload(archive.path, key))
        staged["source_dir"] = bucket_layout.s3_uri(bucket, key)
    channels = execution_input.get("channels")
    example = source_dir is None and entry_point is None
    if isinstance(channels, Mapping):
        labels = {**{name: f"channels.{name}" for name in channels}, **(channel_labels or {})}
        if example:
            _check_example_channel_names(channels)
        staged_channels = {}
        for name, value in channels.items():
            if is_s3_uri(value) or not isinstance(value, str):
                staged_channels[name] = value  # the workflow's own check names a bad value
                continue
            directory = _resolve(value, base_dir)
            files = channel_files(directory, labels[name])
            if example:
                _check_example_channel(directory, labels[name])
            prefix = bucket_layout.user_channel_prefix(name, directory_digest(files, directory))
            uploads += [StagedUpload(path, prefix + path.relative_to(directory).as_posix()) for path in files]
            staged_channels[name] = bucket_layout.s3_uri(bucket, prefix)
        staged["channels"] = staged_channels
    return staged, uploads


def _check_example_channel_names(channels: Mapping[str, Any]) -> None:
    missing = [name for name in CHANNELS if name not in channels]
    if missing:
        raise StagingError(
            f"channels: the built-in example reads {' and '.join(CHANNELS)}; {', '.join(missing)} is missing "
            f"(given: {', '.join(channels) or 'none'})"
        )


def _check_example_channel(directory: Path, label: str) -> None:
    try:
        check_channels([directory])
    except ExampleToolError as error:
        raise StagingError(f"{label}: {error}") from None


def stage_inputs(
    execution_input: Mapping[str, Any], upload: Uploader, work_dir: Path, base_dir: Path
) -> dict[str, Any]:
    staged, uploads = plan_staging(execution_input, work_dir, base_dir)
    for item in uploads:
        upload(item.local_path, item.key)
    return staged


def channel_files(directory: Path, field: str) -> list[Path]:
    if not directory.exists():
        raise StagingError(f"{field}: {directory}: no such directory; a channel is a directory of data files")
    if not directory.is_dir():
        raise StagingError(f"{field}: {directory}: is a file; a channel is a directory of data files")
    if not os.access(directory, os.R_OK | os.X_OK):
        raise StagingError(f"{field}: {directory}: cannot be read (permission denied); make it readable")
    files = sorted(path for path in directory.rglob("*") if path.is_file() and not path.name.startswith("."))
    if not files:
        raise StagingError(f"{field}: {directory}: holds no files; a channel needs at least one data file")
    unreadable = [path for path in files if not os.access(path, os.R_OK)]
    if unreadable:
        raise StagingError(f"{field}: {unreadable[0]}: cannot be read (permission denied); make it readable")
    return files


def directory_digest(files: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _resolve(value: str, base_dir: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base_dir / path)
