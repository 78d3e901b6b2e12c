"""Retry waits inside moto's Step Functions interpreter, shortened for the workflow tests and the fault bench.

A Retry's IntervalSeconds (2 s and 5 s in our ASL, with backoff rates of 2 and 3, up to minutes) is a real sleep in
moto's interpreter: a workflow test that has one call throttled a few times would sleep for minutes and compute for
one. Here each retry waits at most ``longest`` seconds; which errors are retried, how often, and what the history
records stay the same (nothing else happens during a retry's wait that the tests could observe), and every interval
the definition asked for is recorded.

A callback task's timeout (WaitForJob's fallback poll, monitor_interval_seconds: 1 s in the workflow tests, 60 s
where a test means "never") was a real wait too, the largest part of the workflow tests' time. Shortening it
naively raced the handlers and the scripted job's events on a busy machine. :func:`callback_timeouts_when_quiet`
instead ends such a wait by its timeout as soon as nothing can end it sooner: ``quiet(timeout)`` (the workflow
harness's) says no Lambda, event, timer or test action is under way that could complete the token within it (a
scripted job due to end sooner is made to end at once instead). What the wait asks is recorded; a wait that is not
quiet waits as before, up to its real timeout. So the order of a timeout against everything else is the one it has
in real time, without the idle seconds.

moto times such a task twice: the task's wait for its token, and around the whole task (ExecutionState's
``_evaluate_with_timeout``) a real timer with the same timeout, started before the task invokes the Lambda that
hands its token out. On a loaded machine that in-process Lambda (milliseconds in AWS) took longer than the tests'
1 s fallback: the state timed out before its wait began, and moto's abandoned evaluation went on with its frame
ended, every part of it skipped while the code around it still popped their values; it read the state's input as
the wait's timeout (a dict among the timeouts asked) and added a stale TaskSubmitted to the next wait's history
(forced in tests/workflow/test_event_driven_wait.py). A wall-clock limit on the machine's speed, then: while
:func:`callback_timeouts_when_quiet` is open, a callback task's own wait carries its timeout (counted from when the
token was handed out) and the timer around it waits for the task to end: that timer is the local runtime's own patch
(local_runtime/interpreter_timeouts.py), which the tests' wait replaces while it is open.

The patch points are moto 5.2's retrier module, its callback task's wait and the timer around a state; they are
checked, so a moto upgrade that moves them fails here with the name of what moved instead of slowing the suite down
or racing it silently.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace

from local_runtime.interpreter_timeouts import callback_timeouts_as_in_aws

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


#: How often a callback task's wait looks again whether it has become quiet, in seconds.
QUIET_CHECK_SECONDS = 0.005


@contextlib.contextmanager
def callback_timeouts_when_quiet(quiet: Callable[[float], bool]) -> Iterator[list[float]]:
    """While open, a callback task's wait for its token ends by its timeout once ``quiet(timeout)`` holds (nothing
    under way can complete the token before then), else as before; yields the timeouts asked for, in order."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    task_class = state_task_service_callback.StateTaskServiceCallback
    if not callable(getattr(task_class, "_wait_for_task_token_timeout", None)):
        raise AssertionError(
            f"moto's interpreter moved {task_class.__name__}._wait_for_task_token_timeout: update tests/interpreter_clock.py"
        )
    asked: list[float] = []

    def wait_for_task_token(self, timeout_seconds: int, callback_endpoint):
        asked.append(timeout_seconds)
        deadline = time.monotonic() + timeout_seconds
        while True:
            outcome = callback_endpoint.wait(timeout=min(QUIET_CHECK_SECONDS, max(0.0, deadline - time.monotonic())))
            if callback_endpoint._notify_event.is_set():
                return outcome  # the token was completed (or the wait interrupted: None)
            if time.monotonic() >= deadline or quiet(timeout_seconds):
                return None  # timed out: moto's CallbackOutcomeTimedOut, States.Timeout

    # moto's timer around the state waits for the callback task to end, as in the local runtime (the product's
    # patch, local_runtime/interpreter_timeouts.py); the task's own wait is this clock's, counted from the hand-out.
    with callback_timeouts_as_in_aws():
        original = task_class._wait_for_task_token_timeout
        task_class._wait_for_task_token_timeout = wait_for_task_token
        try:
            yield asked
        finally:
            task_class._wait_for_task_token_timeout = original
