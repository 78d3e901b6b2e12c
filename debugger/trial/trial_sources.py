"""Where a trial reads a run's debug output from: a local directory or an S3 prefix (boto3)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlparse

from contracts.distributed import WORKERS_DIR
from debugger.core.exceptions import IndexReaderException
from debugger.storage import layout


def is_s3_uri(path: str) -> bool:
    return str(path).startswith("s3://")


class LocalSource:
    def __init__(self, path: str | Path):
        self.path = Path(os.path.expanduser(str(path)))
        self.description = str(self.path)

    def step_files(self) -> dict[int, str]:
        return {step: str(path) for step, path in layout.list_step_files(self.path).items()}

    def open_step(self, locator: str) -> BinaryIO:
        return open(locator, "rb")

    def read_text(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def exists(self, name: str) -> bool:
        return (self.path / name).exists()

    def read_metrics(self) -> list[dict]:
        return layout.read_metrics(self.path)

    def worker_names(self) -> list[str]:
        """The workers besides the chief that wrote their own output (``workers/<name>/``)."""
        directory = self.path / WORKERS_DIR
        return sorted(entry.name for entry in directory.iterdir() if entry.is_dir()) if directory.is_dir() else []

    def worker_location(self, worker: str) -> str:
        return str(self.path / WORKERS_DIR / worker)


class S3Source:
    """``s3://bucket/prefix``: the layout the hook's S3 mirror (or an s3:// out_dir) writes."""

    def __init__(self, uri: str, client=None):
        import boto3  # lazily: only S3 trials need it

        parsed = urlparse(uri.strip())
        if not parsed.netloc:
            raise ValueError(f"not an s3://bucket/prefix URI: {uri!r}")
        self.bucket = parsed.netloc
        self.prefix = parsed.path.lstrip("/")
        if self.prefix and not self.prefix.endswith("/"):
            self.prefix += "/"
        self.client = client or boto3.client("s3")
        self.description = uri

    def _keys(self, prefix: str) -> list[str]:
        try:
            paginator = self.client.get_paginator("list_objects_v2")
            return [item["Key"] for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix) for item in page.get("Contents", [])]
        except Exception as error:  # botocore's errors: a missing bucket, no permission, no network
            raise IndexReaderException(f"could not list s3://{self.bucket}/{prefix}: {error}") from error

    def step_files(self) -> dict[int, str]:
        files = {}
        for key in self._keys(self.prefix + layout.STEPS_DIR + "/"):
            step = layout.step_from_file_name(key.rsplit("/", 1)[-1])
            if step is not None:
                files[step] = key
        return files

    def open_step(self, locator: str) -> BinaryIO:
        body = self.client.get_object(Bucket=self.bucket, Key=locator)["Body"].read()
        return io.BytesIO(body)

    def read_text(self, name: str) -> str | None:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"].read().decode("utf-8")
        except self.client.exceptions.NoSuchKey:
            return None

    def exists(self, name: str) -> bool:
        return bool(self._keys(self.prefix + name))

    def worker_names(self) -> list[str]:
        prefix = f"{self.prefix}{WORKERS_DIR}/"
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix, Delimiter="/")
            found = [item["Prefix"] for page in pages for item in page.get("CommonPrefixes", [])]
        except Exception as error:  # botocore's errors, as in _keys
            raise IndexReaderException(f"could not list s3://{self.bucket}/{prefix}: {error}") from error
        return sorted(name[len(prefix) :].strip("/") for name in found)

    def worker_location(self, worker: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{WORKERS_DIR}/{worker}/"

    def read_metrics(self) -> list[dict]:
        text = self.read_text(layout.METRICS_FILE)
        if not text:
            return []
        records = []
        for line in text.splitlines(keepends=True):
            if line.endswith("\n"):
                record = json.loads(line)
                record["value"] = float(record["value"])
                records.append(record)
        return records
