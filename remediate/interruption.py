"""Ctrl-C and SIGTERM at any moment of a local run: one exception, raised in the main thread, that says which
signal arrived, when and during what.

    with Interruptions() as signals:
        signals.phase = "set-up"
        ...                       # Interrupted (a BaseException: no `except Exception` swallows it)
        with signals.shielded():  # cleanup that must finish: further signals are ignored
            ...

Exit codes as a shell reports them: 130 for SIGINT, 143 for SIGTERM.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
from collections.abc import Iterator
from typing import Any

HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived. A BaseException, like KeyboardInterrupt, so library code that catches
    Exception cannot turn it into some other error on the way up."""

    def __init__(self, signal_number: int, at: dt.datetime, phase: str):
        self.signal_number = signal_number
        self.signal_name = signal.Signals(signal_number).name
        self.at = at
        self.phase = phase
        super().__init__(f"{self.signal_name} during {phase}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signal_number

    def to_json(self) -> dict[str, Any]:
        return {"signal": self.signal_name, "at": self.at.isoformat(timespec="seconds"), "during": self.phase}

    def describe(self) -> str:
        return f"interrupted by {self.signal_name} at {self.at:%H:%M:%S} during {self.phase}"


class Interruptions:
    """Installs the handlers on enter, restores the previous ones on exit. ``phase`` names what is under way."""

    def __init__(self) -> None:
        self.phase = "start-up"
        self._previous: dict[int, Any] = {}
        self._shielded = False

    def __enter__(self) -> Interruptions:
        self._previous = {sig: signal.signal(sig, self._raise) for sig in HANDLED}
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    @contextlib.contextmanager
    def shielded(self) -> Iterator[None]:
        """Ignore SIGINT and SIGTERM until the block ends (a second Ctrl-C must not cut the cleanup short)."""
        self._shielded = True
        for sig in HANDLED:
            signal.signal(sig, signal.SIG_IGN)
        try:
            yield
        finally:
            self._shielded = False
            for sig in HANDLED:
                signal.signal(sig, self._raise)

    def _raise(self, signal_number: int, _frame: Any) -> None:
        if self._shielded:
            return
        raise Interrupted(signal_number, dt.datetime.now().astimezone(), self.phase)
