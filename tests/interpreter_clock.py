"""Retry waits inside moto's Step Functions interpreter, shortened for the workflow tests and the fault bench.

A Retry's IntervalSeconds (2 s and 5 s in our ASL, with backoff rates of 2 and 3, up to minutes) is a real sleep in
moto's interpreter: a workflow test that has one call throttled a few times would sleep for minutes and compute for
one. Here each retry waits at most ``longest`` seconds; which errors are retried, how often, and what the history
records stay the same (nothing else happens during a retry's wait that the tests could observe), and every interval
the definition asked for is recorded.

A callback task's timeout (WaitForJob's fallback poll, monitor_interval_seconds: 1 s in the workflow tests, 60 s
where a test means "never") was a real wait too, the largest part of the workflow tests' time. Shortening it
naively raced the handlers and the scripted job's events on a busy machine. :func:`callback_timeouts_when_quiet`
instead ends such a wait by its timeout as soon as nothing can end it sooner: ``quiet()`` (the workflow harness's)
says no Lambda, event, timer or test action is under way that could complete the token. What the wait asks is
recorded; a wait that is not quiet waits as before, up to its real timeout. So the order of a timeout against
everything else is the one it has in real time, without the idle second.

moto times such a task twice: the task's wait for its token, and around the whole task (ExecutionState's
``_evaluate_with_timeout``) a real timer with the same timeout, started before the task invokes the Lambda that
hands its token out. On a loaded machine that in-process Lambda (milliseconds in AWS) took longer than the tests'
1 s fallback: the state timed out before its wait began, and moto's abandoned evaluation went on with its frame
ended, every part of it skipped while the code around it still popped their values; it read the state's input as
the wait's timeout (a dict among the timeouts asked) and added a stale TaskSubmitted to the next wait's history
(forced in tests/workflow/test_event_driven_wait.py). A wall-clock limit on the machine's speed, then: while
:func:`callback_timeouts_when_quiet` is open, a callback task's own wait carries its timeout (counted from when the
token was handed out) and the timer around it waits for the task to end.

The patch points are moto 5.2's retrier module, its callback task's wait and the timer around a state; they are
checked, so a moto upgrade that moves them fails here with the name of what moved instead of slowing the suite down
or racing it silently.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
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


#: How often a callback task's wait looks again whether it has become quiet, in seconds.
QUIET_CHECK_SECONDS = 0.005


@contextlib.contextmanager
def callback_timeouts_when_quiet(quiet: Callable[[], bool]) -> Iterator[list[float]]:
    """While open, a callback task's wait for its token ends by its timeout once ``quiet()`` holds (nothing under
    way can complete the token before then), else as before; yields the timeouts asked for, in order."""
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    task_class = state_task_service_callback.StateTaskServiceCallback
    if not callable(getattr(task_class, "_wait_for_task_token_timeout", None)):
        raise AssertionError(
            f"moto's interpreter moved {task_class.__name__}._wait_for_task_token_timeout: update tests/interpreter_clock.py"
        )
    original = task_class._wait_for_task_token_timeout
    asked: list[float] = []

    def wait_for_task_token(self, timeout_seconds: int, callback_endpoint):
        asked.append(timeout_seconds)
        deadline = time.monotonic() + timeout_seconds
        while True:
            outcome = callback_endpoint.wait(timeout=min(QUIET_CHECK_SECONDS, max(0.0, deadline - time.monotonic())))
            if callback_endpoint._notify_event.is_set():
                return outcome  # the token was completed (or the wait interrupted: None)
            if time.monotonic() >= deadline or quiet():
                return None  # timed out: moto's CallbackOutcomeTimedOut, States.Timeout

    task_class._wait_for_task_token_timeout = wait_for_task_token
    with _state_timer_waits_for_callback_tasks(task_class):
        try:
            yield asked
        finally:
            task_class._wait_for_task_token_timeout = original


@contextlib.contextmanager
def _state_timer_waits_for_callback_tasks(task_class: type) -> Iterator[None]:
    """While open, the timer moto keeps around a callback task waits for the task to end: its wait for the token
    ends by the same timeout (above), counted from when the token was handed out."""
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import ResourceCondition

    state_class = execute_state.ExecutionState
    if not callable(getattr(state_class, "_evaluate_with_timeout", None)) or not hasattr(execute_state, "threading"):
        raise AssertionError(
            f"moto's interpreter moved {state_class.__name__}._evaluate_with_timeout: update tests/interpreter_clock.py"
        )
    original_evaluate, original_threading = state_class._evaluate_with_timeout, execute_state.threading
    timing_a_callback_task = threading.local()

    class TaskTimer(threading.Event):
        """The event _evaluate_with_timeout waits on for its task to end (the only Event that module makes)."""

        def wait(self, timeout: float | None = None) -> bool:
            if getattr(timing_a_callback_task, "active", False):
                return super().wait()
            return super().wait(timeout)

    def evaluate_with_timeout(self, env) -> None:
        callback = isinstance(self, task_class) and self.resource.condition == ResourceCondition.WaitForTaskToken
        timing_a_callback_task.active = callback
        try:
            return original_evaluate(self, env)
        finally:
            timing_a_callback_task.active = False

    # _evaluate_with_timeout calls threading.Event() once, for its timer, and nothing else of the threading module.
    execute_state.threading = SimpleNamespace(Event=TaskTimer)
    state_class._evaluate_with_timeout = evaluate_with_timeout
    try:
        yield
    finally:
        state_class._evaluate_with_timeout = original_evaluate
        execute_state.threading = original_threading
