"""The debugger's own lines in a job's log say they are the debugger's and where they come from.

A job's log mixes the script's output with what runs beside it. Every line the debugger writes starts with
:data:`PREFIX`; its logging records (loggers under ``debugger``) get a handler that adds it, once per process. Warnings
a library the debugger drives would print on its behalf, repeated and unexplained (tensorboardX's ``NaN or Inf found
in input tensor.`` for each non-finite value the hook writes to TensorBoard), are dropped there, and the debugger says
it once itself, naming what it was writing and at which step.

Standard library only: the job launcher imports it before the script brings its framework.
"""

from __future__ import annotations

import logging
import sys

PREFIX = "[debugger] "
#: Messages of other libraries' loggers the debugger causes and reports itself (logger name -> message start).
REPORTED_BY_THE_DEBUGGER = {"tensorboardX.x2num": "NaN or Inf found in input tensor"}



class _Prefixed(logging.StreamHandler):
    """Writes the debugger's records to stderr as ``[debugger] <message>``."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(logging.Formatter(PREFIX + "%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr  # the stream of now (a script or a test may have replaced it since)
        super().emit(record)


class _DropReported(logging.Filter):
    def __init__(self, start: str) -> None:
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


def prefix_debugger_logging() -> None:
    """In a job's process (the launcher calls it): the ``debugger`` loggers write to stderr with the prefix, and not
    again through a root logger the script may configure; see :func:`drop_reported_warnings`. Idempotent."""
    logger = logging.getLogger("debugger")
    if not any(isinstance(handler, _Prefixed) for handler in logger.handlers):
        logger.addHandler(_Prefixed())
        logger.propagate = False
    drop_reported_warnings()


def drop_reported_warnings() -> None:
    """Other libraries' warnings the debugger causes and reports itself, once and as its own, are dropped."""
    for name, start in REPORTED_BY_THE_DEBUGGER.items():
        other = logging.getLogger(name)
        if not any(isinstance(existing, _DropReported) for existing in other.filters):
            other.addFilter(_DropReported(start))


def say(message: str) -> None:
    """One line of the debugger's own in the job's log (stderr)."""
    print(PREFIX + message, file=sys.stderr, flush=True)
