"""SageMaker's failure file (``/opt/ml/output/failure``, env FAILURE_FILE_ENV locally): its text becomes the job's
FailureReason. The job launcher writes it when the script ends badly; the stall watchdog when it ends a hung job
itself. Imports nothing heavy (the launcher imports it before the script brings its framework)."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path

from contracts.job import DEFAULT_FAILURE_FILE, FAILURE_FILE_ENV, MAX_FAILURE_TEXT


class FailureFile:
    """SageMaker's failure file: written once, and never over a text the script wrote itself."""

    def __init__(self, environ: Mapping[str, str]):
        self.path = Path(environ.get(FAILURE_FILE_ENV, DEFAULT_FAILURE_FILE))
        self._started = time.time()

    def written_by_script(self) -> bool:
        try:
            stat = self.path.stat()
        except OSError:
            return False
        return stat.st_size > 0 and stat.st_mtime >= self._started - 1

    def write(self, text: str, *, unless_written: bool = True) -> None:
        print(text, file=sys.stderr, flush=True)
        if unless_written and self.written_by_script():
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(text[:MAX_FAILURE_TEXT], encoding="utf-8")
        except OSError as error:
            print(f"could not write the failure file {self.path}: {error}", file=sys.stderr, flush=True)
