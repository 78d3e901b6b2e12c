"""Mirror the debug output to S3 (the cloud case): status document at once, step files from a background thread.

boto3 is imported lazily so the job needs it only when mirroring is on
(hook config has S3OutputPath and env DEBUG_OUTPUT_S3_SYNC is not "off").
Upload failures are logged and retried at close; they never stop training.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from pathlib import Path
from urllib.parse import urlparse

from contracts.job import DEBUG_OUTPUT_S3_REGION_ENV, DEBUG_OUTPUT_S3_SYNC_ENV
from contracts.rule_status import RULE_STATUS_FILE

SYNC_ENV = DEBUG_OUTPUT_S3_SYNC_ENV
#: Where the bucket's region is read, in order (the job request sets the first).
REGION_ENVS = (DEBUG_OUTPUT_S3_REGION_ENV, "AWS_REGION", "AWS_DEFAULT_REGION")
LOGGER = logging.getLogger(__name__)


def mirroring_enabled(s3_output_path: str | None) -> bool:
    return bool(s3_output_path) and os.environ.get(SYNC_ENV, "").strip().lower() != "off"


def bucket_region() -> str | None:
    """The artifacts bucket's region from the job's environment (None: boto3's own default)."""
    return next((os.environ[name] for name in REGION_ENVS if os.environ.get(name)), None)


def split_s3_uri(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"not an s3:// URI: {uri!r}")
    prefix = parsed.path.lstrip("/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return parsed.netloc, prefix


class S3Mirror:
    def __init__(self, out_dir: Path, s3_output_path: str, client=None):
        import boto3  # lazily: only the cloud case needs it

        self.out_dir = out_dir
        self.bucket, self.prefix = split_s3_uri(s3_output_path)
        self.client = client or boto3.client("s3", region_name=bucket_region())
        self.failed: list[Path] = []
        self._queue: queue.Queue[Path | None] = queue.Queue()
        self._thread = threading.Thread(target=self._upload_loop, name="debugger-s3-mirror", daemon=True)
        self._thread.start()

    def key_for(self, path: Path) -> str:
        return self.prefix + path.relative_to(self.out_dir).as_posix()

    def put_status(self, document_json: str) -> None:
        """Upload the status document now (it is small and the monitor is waiting for it)."""
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=self.prefix + RULE_STATUS_FILE,
                Body=document_json.encode("utf-8"),
                ContentType="application/json",
            )
        except Exception as error:  # noqa: BLE001 - mirroring must not stop training
            LOGGER.warning("could not upload %s to s3://%s/%s: %s", RULE_STATUS_FILE, self.bucket, self.prefix, error)
            self.failed.append(self.out_dir / RULE_STATUS_FILE)

    def enqueue(self, path: Path) -> None:
        self._queue.put(path)

    def _upload(self, path: Path) -> bool:
        try:
            self.client.upload_file(str(path), self.bucket, self.key_for(path))
            return True
        except Exception as error:  # noqa: BLE001
            LOGGER.warning("could not upload %s: %s", path, error)
            return False

    def _upload_loop(self) -> None:
        while True:
            path = self._queue.get()
            try:
                if path is None:
                    return
                if not self._upload(path):
                    self.failed.append(path)
            finally:
                self._queue.task_done()

    def close(self, extra_files: list[Path]) -> None:
        """Upload what is queued, then ``extra_files`` and anything that failed before; stop the thread."""
        self._queue.put(None)
        self._thread.join()
        retry, self.failed = self.failed, []
        for path in [*retry, *extra_files]:
            if path.exists() and not self._upload(path):
                self.failed.append(path)
