"""The metrics a training script only prints, read in the job as SageMaker reads them from its log: each whole line
the script writes to stdout or stderr goes through the run_spec's metric_definitions (SageMaker's MetricDefinitions,
``contracts.progress_log.metric_values_in``), and each value read is reported to the job's open hooks, as a metric the
script saved with the debugger would be (:meth:`debugger.hook.hook_base.HookBase.report_printed_metric`).

Why: the rules that judge progress do not stop a run that meets its objective, and the planner reads the objective's
course over the epochs (a run that met it at an earlier epoch and fell again): both need the metric while the job
runs. A script that prints ``epoch=3 val_acc=0.91`` and saves nothing with the debugger had neither; SageMaker's own
view of it (FinalMetricDataList) holds the last value only, after the job.

Installed by the job launcher around the entry point. The script's output reaches the log unchanged (the streams are
wrapped, not replaced: every other attribute is the original stream's). What is read: text written through Python's
``sys.stdout`` and ``sys.stderr`` by the script's process (print, logging, tqdm); not what a child process or C code
writes to the file descriptors. Imports no torch (the launcher loads this module before the script's framework).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

from contracts.progress_log import metric_values_in

#: A line is read up to this many characters; while one longer is still being written only its latest part is kept
#: (a progress bar redrawn with "\r" and no newline grows one line without end).
MAX_LINE_CHARACTERS = 10_000

_reporting = threading.local()  # set while a value is being reported: the hook's own logging is not read again


def report_to_open_hooks(name: str, value: float) -> None:
    """Give ``value`` of the printed metric ``name`` to every hook open in this process (none: nothing to do)."""
    hook_base = sys.modules.get("debugger.hook.hook_base")  # loaded once the script's framework made a hook
    if hook_base is None:
        return
    for hook in hook_base.open_hooks():
        hook.report_printed_metric(name, value)


class LineReader:
    """The metric definitions over whole lines of text given in any pieces (``feed``)."""

    def __init__(self, definitions: list[dict[str, str]]):
        self.definitions = [dict(definition) for definition in definitions]
        self._pending = ""
        self._lock = threading.Lock()

    def feed(self, text: str) -> None:
        with self._lock:
            pending = self._pending + text
            *lines, rest = pending.split("\n")
            self._pending = rest[-MAX_LINE_CHARACTERS:]
        for line in lines:
            self.read_line(line)

    def flush(self) -> None:
        """Read the last line even without its newline (the script's output has ended)."""
        with self._lock:
            line, self._pending = self._pending, ""
        if line:
            self.read_line(line)

    def read_line(self, line: str) -> None:
        if getattr(_reporting, "active", False):
            return
        _reporting.active = True
        try:
            for name, value in metric_values_in(line[:MAX_LINE_CHARACTERS], self.definitions):
                report_to_open_hooks(name, value)
        finally:
            _reporting.active = False


class ReadingStream:
    """A text stream that writes through to ``stream`` and gives what is written to ``reader``."""

    def __init__(self, stream: Any, reader: LineReader):
        self._stream = stream
        self._reader = reader

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        if isinstance(text, str):
            self._reader.feed(text)
        return written

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def reading_printed_metrics(definitions: list[dict[str, str]] | None) -> Iterator[None]:
    """While open, what this process writes to sys.stdout and sys.stderr is read with ``definitions`` (none given:
    nothing is wrapped). The streams are put back afterwards, unless the script replaced them meanwhile."""
    if not definitions:
        yield
        return
    readers = {"stdout": LineReader(definitions), "stderr": LineReader(definitions)}
    originals = {name: getattr(sys, name) for name in readers}
    wrapped = {name: ReadingStream(originals[name], readers[name]) for name in readers}
    for name, stream in wrapped.items():
        setattr(sys, name, stream)
    try:
        yield
    finally:
        for name, reader in readers.items():
            reader.flush()
            if getattr(sys, name) is wrapped[name]:
                setattr(sys, name, originals[name])
