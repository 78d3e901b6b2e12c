"""Retry waits inside moto's Step Functions interpreter, sped up for the workflow tests.

A Retry's IntervalSeconds (2 s and 5 s in our ASL, with backoff rates of 2 and 3) is a real sleep in moto's
interpreter: a workflow test that has one call throttled a few times sleeps for tens of seconds and computes for one.
Here each retry waits ``factor`` of its interval; which errors are retried, how often, and what the history records
stay the same (nothing else happens during a retry's wait that the tests could observe).

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

#: What a Retry's wait lasts in the workflow tests, as a fraction of its IntervalSeconds (with backoff).
RETRY_WAIT_FACTOR = 0.05


@contextlib.contextmanager
def retry_waits_scaled(factor: float = RETRY_WAIT_FACTOR) -> Iterator[float]:
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    if not hasattr(retrier_decl, "time"):
        raise AssertionError(f"moto's interpreter moved {retrier_decl.__name__}.time: update tests/interpreter_clock.py")
    original = retrier_decl.time
    # The retrier calls time.sleep(interval_seconds) between attempts, and nothing else of the time module.
    retrier_decl.time = SimpleNamespace(sleep=lambda seconds: time.sleep(seconds * factor))
    try:
        yield factor
    finally:
        retrier_decl.time = original
