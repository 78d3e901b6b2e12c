"""The end of an execution in moto's Step Functions interpreter, told to the tests that wait for it.

The workflow tests waited for an execution to end by polling DescribeExecution with a growing pause (20 ms up to
250 ms): each poll cost moto a request's CPU (a tenth of the workflow tests' CPU time, yappi), and the pause ran on
after the end (about a tenth of a second per wait). Here moto's execution worker, when its program has ended and its
status is recorded, counts one more ended execution and wakes whoever waits; a waiter reads the status through
DescribeExecution as before. A StopExecution (status ABORTED at once, local_runtime/interpreter_stop.py) is seen by
the waiter's next look; it looks again at least every ``Ended.LONGEST_PAUSE_SECONDS``, so nothing depends on being
woken.

The patch point is moto 5.2's BaseExecutionWorkerCommunication.terminated (the worker's call after its program
ends); it is checked, so a moto upgrade that moves it fails here instead of silently polling again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


class Ended:
    """How many executions have ended; :meth:`wait_after` sleeps until one more has, or ``timeout`` passes."""

    #: The longest a waiter sleeps before it looks again by itself.
    LONGEST_PAUSE_SECONDS = 0.25

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0

    @property
    def count(self) -> int:
        with self._changed:
            return self._count

    def one_more(self) -> None:
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def wait_after(self, count: int, timeout: float) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self._count != count, timeout=min(timeout, self.LONGEST_PAUSE_SECONDS))


@contextlib.contextmanager
def execution_ends_told() -> Iterator[Ended]:
    """While open, every execution moto's interpreter ends is counted in the yielded :class:`Ended`."""
    from moto.stepfunctions.parser.backend import execution as execution_module

    communication_class = execution_module.BaseExecutionWorkerCommunication
    if not callable(getattr(communication_class, "terminated", None)):
        raise AssertionError(
            f"moto's interpreter moved {communication_class.__name__}.terminated: update tests/{__name__}.py"
        )
    original = communication_class.terminated
    ended = Ended()

    def terminated(self) -> None:
        try:
            original(self)  # records the status DescribeExecution reads
        finally:
            ended.one_more()

    communication_class.terminated = terminated
    try:
        yield ended
    finally:
        communication_class.terminated = original
