"""A process-wide patch of moto's classes, installed while any of its contexts is open, in any thread.

The local runtime holds its patches of moto's Step Functions interpreter (interpreter_stop, interpreter_timeouts) for
its interpreter's life, and a test may open the same patch again around its own moto: the patch is installed by the
first context to open and restored by the last to close, so contexts nest and overlap freely.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class ProcessWidePatch:
    """``install()`` patches and returns the function that restores what it patched."""

    def __init__(self, install: Callable[[], Callable[[], None]]) -> None:
        self._install = install
        self._lock = threading.Lock()
        self._entries = 0  # open contexts, in every thread
        self._restore: Callable[[], None] | None = None  # while installed

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        with self._lock:
            if self._entries == 0:
                self._restore = self._install()
            self._entries += 1
        try:
            yield
        finally:
            with self._lock:
                self._entries -= 1
                if self._entries == 0:
                    restore, self._restore = self._restore, None
                    restore()

    def installed(self) -> bool:
        with self._lock:
            return self._restore is not None
