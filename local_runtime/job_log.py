"""A training job's log as SageMaker's CloudWatch side reads it: the request's MetricDefinitions (regexes) over its
lines give FinalMetricDataList, and the progress lines (``contracts.progress_log``) give the steps and epochs the
local runtime shows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from contracts.progress_log import metric_values_in, parse_progress_line


class JobLog:
    """One log file, read incrementally: each call to :meth:`read` parses the whole lines written since the last.

    Not thread-safe on its own: the job record's lock guards it."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.remainder = ""
        #: metric name -> (its latest finite value, when it was read)
        self.metric_values: dict[str, tuple[float, dt.datetime]] = {}
        self.steps: list[dict[str, Any]] = []
        self.epochs: list[dict[str, Any]] = []
        #: The latest training step printed since the job's processes last (re)started (None: none yet).
        self.run_latest_step: int | None = None
        self._superseding = {"training_step": False, "epoch_end": False}

    def restarted(self) -> None:
        """The job's processes restart (after a spot interruption) and redo the steps after their checkpoint: the
        first step (and epoch) line from now on supersedes the records from its number on, so each step is
        recorded once, from the run that went on."""
        self.run_latest_step = None
        self._superseding = {"training_step": True, "epoch_end": True}

    def read(self, definitions: list[dict[str, str]]) -> None:
        """Parse the lines written since the last call with ``definitions`` (SageMaker's MetricDefinitions)."""
        if not self.path.exists():
            return
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            chunk = log.read()
        self.offset += len(chunk)
        text = self.remainder + chunk.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self.remainder = lines.pop()
        for line in lines:
            self._read_line(line, definitions)

    def latest(self) -> dict[str, Any]:
        """The latest step and epoch records (None where there is none yet)."""
        return {"step": self.steps[-1] if self.steps else None, "epoch": self.epochs[-1] if self.epochs else None}

    def _read_line(self, line: str, definitions: list[dict[str, str]]) -> None:
        now = dt.datetime.now(dt.UTC)
        for name, value in metric_values_in(line, definitions):
            self.metric_values[name] = (value, now)
        parsed = parse_progress_line(line)
        if parsed is None:
            return
        kind = parsed["kind"]
        records, key = (self.steps, "step") if kind == "training_step" else (self.epochs, "epoch")
        if self._superseding[kind] and isinstance(parsed.get(key), int):
            self._superseding[kind] = False
            records[:] = [record for record in records if not record.get(key, -1) >= parsed[key]]
        records.append(parsed)
        if kind == "training_step" and isinstance(parsed.get("step"), int):
            self.run_latest_step = max(self.run_latest_step or 0, parsed["step"])


def log_tail(path: Path, lines: int = 5) -> str:
    """'Last log lines: a | b | c' from the end of a log, for a failure reason ('' when there is none)."""
    if not path.exists():
        return ""
    tail = path.read_text(errors="replace").strip().splitlines()[-lines:]
    return "Last log lines: " + " | ".join(tail) if tail else ""
