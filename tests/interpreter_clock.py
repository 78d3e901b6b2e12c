"""Retry waits inside moto's Step Functions interpreter, shortened for the workflow tests and the fault bench.

A Retry's IntervalSeconds (2 s and 5 s in our ASL, with backoff rates of 2 and 3, up to minutes) is a real sleep in
moto's interpreter: a workflow test that has one call throttled a few times would sleep for minutes and compute for
one. Here each retry waits at most ``longest`` seconds; which errors are retried, how often, and what the history
records stay the same (nothing else happens during a retry's wait that the tests could observe), and every interval
the definition asked for is recorded.

Task timeouts (WaitForJob's fallback poll) are left real: their order against the job-events Lambda and the
scripted job's events is what the tests check, and a shortened timeout would race a handler on a busy machine.

The patch point is moto 5.2's retrier module; it is checked, so a moto upgrade that moves it fails here with the
name of what moved instead of slowing the suite down silently.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from types import SimpleNamespace

#: The longest a Retry's wait lasts in the workflow tests, in seconds.
LONGEST_RETRY_WAIT_SECONDS = 0.01


@contextlib.contextmanager
def retry_waits_shortened(longest: float = LONGEST_RETRY_WAIT_SECONDS) -> Iterator[list[float]]:
    """While open, a Retry's wait sleeps min(interval, ``longest``); yields the intervals asked for, in order."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    if not hasattr(retrier_decl, "time"):
        raise AssertionError(f"moto's interpreter moved {retrier_decl.__name__}.time: update tests/interpreter_clock.py")
    original = retrier_decl.time
    asked: list[float] = []

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        time.sleep(min(seconds, longest))

    # The retrier calls time.sleep(interval_seconds) between attempts, and nothing else of the time module.
    retrier_decl.time = SimpleNamespace(sleep=sleep)
    try:
        yield asked
    finally:
        retrier_decl.time = original
