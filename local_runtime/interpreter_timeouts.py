"""A callback task's TimeoutSeconds in moto's Step Functions interpreter, made what AWS does: one clock, counted from
when the task is scheduled, that ends the task by its own path.

WaitForJob is a ``lambda:invoke.waitForTaskToken`` task: the job-events Lambda keeps the task's token and returns,
and the wait's timeout (the fallback poll, monitor_interval_seconds) ends it if no job state change completes the
token first. In AWS the timeout counts from when the task is scheduled, and the Lambda keeps the token in
milliseconds, so the wait lasts about its timeout. moto 5.2 times such a task twice: a real timer around the whole
state (ExecutionState's ``_evaluate_with_timeout``), started before the in-process Lambda runs, and the task's own
wait for its token, started again once the Lambda has returned. When the Lambda takes longer than the timeout (the
local one can, on a loaded machine: it is a Python handler in this process, not milliseconds away), the outer timer
times the state out while the Lambda still runs, and moto abandons that evaluation without stopping it: it goes on
with its frame ended, every part of it skipped while the code around it still pops their values. It then records the
hand-out (a stale TaskSubmitted) in the history of whatever state runs by then, reads the state's input where the
wait's timeout belongs (``Event.wait(dict)``: a TypeError on a thread nobody reads), and the token it kept can
overwrite the next wait's, so the job's state change wakes a wait that has already ended and the next one waits out
its whole fallback.

While :func:`callback_timeouts_as_in_aws` is open, the timer around a callback task waits for the task to end, and
the task's wait for its token ends by the deadline counted from when the task was scheduled (its outcome, if the
token was completed meanwhile, wins). A Lambda slower than the timeout so ends its wait at once, TaskTimedOut after
its TaskSubmitted, as one clock would have it; nothing of the task runs on after its state has ended. Other tasks
keep moto's timer.

The patch is process-wide (moto's classes) and re-entrant, as local_runtime/interpreter_stop.py's is: the local
runtime holds it for its interpreter's life. The workflow tests' clock (tests/interpreter_clock.py) still has its own
patch of the same timer, counted from the hand-out; the two nest. Its patch points are checked, so a moto upgrade
that moves them fails here with the name of what moved.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace

from local_runtime.process_patch import ProcessWidePatch

_timing = threading.local()  # set while this thread's _evaluate_with_timeout times a callback task

#: The clock the deadlines are counted on (seconds; a test may put its own).
clock: Callable[[], float] = time.monotonic


def _install() -> Callable[[], None]:
    state_class, task_class, execute_state = _patch_points()
    moto_evaluate, moto_wait, moto_threading = (
        state_class._evaluate_with_timeout, task_class._wait_for_task_token_timeout, execute_state.threading
    )
    state_class._evaluate_with_timeout = _evaluate_with_timeout(moto_evaluate, task_class)
    task_class._wait_for_task_token_timeout = _wait_for_task_token_until_deadline
    # _evaluate_with_timeout makes one threading.Event, its timer, and uses nothing else of that module.
    execute_state.threading = SimpleNamespace(Event=_StateTimer)

    def restore() -> None:
        state_class._evaluate_with_timeout, task_class._wait_for_task_token_timeout = moto_evaluate, moto_wait
        execute_state.threading = moto_threading

    return restore


_PATCH = ProcessWidePatch(_install)


def callback_timeouts_as_in_aws() -> contextlib.AbstractContextManager[None]:
    """While open (in any thread), a callback task's timeout counts from when it was scheduled and ends it by its own
    path; nests and overlaps freely."""
    return _PATCH.opened()


def installed() -> bool:
    return _PATCH.installed()


def deadline(callback_endpoint: object, timeout_seconds: float) -> float:
    """When the wait on ``callback_endpoint`` times out, on :data:`clock`: ``timeout_seconds`` after its task was
    scheduled (from now, for a task this patch did not see scheduled)."""
    scheduled = getattr(callback_endpoint, _SCHEDULED_AT, None)
    return (clock() if scheduled is None else scheduled) + timeout_seconds


_SCHEDULED_AT = "_remediation_scheduled_at"  # set on moto's CallbackEndpoint of the task


def _patch_points() -> tuple[type, type, object]:
    from moto.stepfunctions.parser.asl.component.state.exec import execute_state
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import state_task_service_callback

    state_class = execute_state.ExecutionState
    task_class = state_task_service_callback.StateTaskServiceCallback
    if not callable(getattr(state_class, "_evaluate_with_timeout", None)) or not hasattr(execute_state, "threading"):
        raise AssertionError(f"moto's interpreter moved {state_class.__name__}._evaluate_with_timeout: update {__name__}")
    if not callable(getattr(task_class, "_wait_for_task_token_timeout", None)):
        raise AssertionError(
            f"moto's interpreter moved {task_class.__name__}._wait_for_task_token_timeout: update {__name__}"
        )
    return state_class, task_class, execute_state


class _StateTimer(threading.Event):
    """The event _evaluate_with_timeout waits on for its task to end: without a limit for a callback task (whose own
    wait ends by the deadline), with moto's for every other state."""

    def wait(self, timeout: float | None = None) -> bool:
        if getattr(_timing, "callback_task", False):
            return super().wait()
        return super().wait(timeout)


def _evaluate_with_timeout(original: Callable, task_class: type) -> Callable:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.resource import ResourceCondition

    def evaluate_with_timeout(self, env) -> None:
        callback_task = isinstance(self, task_class) and self.resource.condition == ResourceCondition.WaitForTaskToken
        if callback_task:
            # the task is scheduled now (its token was made just before); each retry is scheduled anew
            token = env.states.context_object.context_object_data["Task"]["Token"]
            setattr(env.callback_pool_manager.get(token), _SCHEDULED_AT, clock())
        _timing.callback_task = callback_task
        try:
            return original(self, env)
        finally:
            _timing.callback_task = False

    return evaluate_with_timeout


def _wait_for_task_token_until_deadline(self, timeout_seconds: int, callback_endpoint):
    """The task's wait for its token, until the deadline counted from when the task was scheduled: the outcome, or
    None (timed out, or interrupted by a stop)."""
    return callback_endpoint.wait(timeout=max(0.0, deadline(callback_endpoint, timeout_seconds) - clock()))
