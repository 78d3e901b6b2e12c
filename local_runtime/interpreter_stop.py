"""StopExecution in moto's Step Functions interpreter, made what AWS does: the execution is ABORTED at once and its
history ends with ExecutionAborted.

moto 5.2's StopExecution only marks the execution's environment stopped. The state in flight goes on evaluating on
its worker threads, and every part of it evaluated after the stop is skipped ("pruned") while the code around it
still pops the value that part should have pushed. A stop that lands while a state is being evaluated rather than
while it waits (a user can stop at any moment: Ctrl-C, SIGTERM, the local runtime closing) so reads the wrong values:
the state's input where WaitForJob's timeout belongs (a TaskScheduled event whose timeoutInSeconds is a dict, which
GetExecutionHistory then fails to serialize: TypeError; or ``Event.wait(dict)``: "'>' not supported between
instances of 'dict' and 'int'"), or an empty stack ("pop from empty list"); the execution then ends FAILED with
States.Runtime over the abort, and the local run's history could not be read back. While :func:`stops_as_in_aws` is
open, a stop ends the execution's record at once: status ABORTED (with the stop's error and cause), the history
closed by ExecutionAborted, nothing the abandoned threads do added after it, and its callback waits released so no
thread waits out a timeout for nothing. What the state in flight had already done (a Lambda under way runs to its
end, as in AWS) stays done. moto also drops StopExecution's error and cause (its backend stops with empty ones); here
ExecutionAborted carries them, as in AWS.

The patch is process-wide (moto's classes) and re-entrant: the local runtime holds it for its interpreter's life,
the workflow tests for theirs, and a test may do both at once, from several threads; it is installed by the first
entry and removed by the last exit. The patch points are moto 5.2's parser Execution.stop and its StopExecution
response; they are checked, so a moto upgrade that moves them fails here.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
from collections.abc import Callable

from local_runtime.process_patch import ProcessWidePatch


def _install() -> Callable[[], None]:
    execution_class, response_class = _patch_points()
    moto_stop, moto_response = execution_class.stop, response_class.stop_execution
    execution_class.stop = _stop_as_in_aws(moto_stop)
    response_class.stop_execution = _keeping_error_and_cause(moto_response)

    def restore() -> None:
        execution_class.stop, response_class.stop_execution = moto_stop, moto_response

    return restore


_PATCH = ProcessWidePatch(_install)
_request = threading.local()  # the error and cause of the StopExecution this thread is answering


def stops_as_in_aws() -> contextlib.AbstractContextManager[None]:
    """While open (in any thread), moto's StopExecution aborts as AWS does; nests and overlaps freely."""
    return _PATCH.opened()


def installed() -> bool:
    """Whether moto's StopExecution is patched now (some stops_as_in_aws is open)."""
    return _PATCH.installed()


def _patch_points() -> tuple[type, type]:
    from moto.stepfunctions import responses
    from moto.stepfunctions.parser.backend import execution as execution_module

    if not callable(getattr(execution_module.Execution, "stop", None)):
        raise AssertionError(f"moto's interpreter moved {execution_module.__name__}.Execution.stop: update {__name__}")
    if not callable(getattr(responses.StepFunctionResponse, "stop_execution", None)):
        raise AssertionError(f"moto moved {responses.__name__}.StepFunctionResponse.stop_execution: update {__name__}")
    return execution_module.Execution, responses.StepFunctionResponse


def _keeping_error_and_cause(original_response: Callable) -> Callable:
    def stop_execution(self):
        # the backend stops the execution on this thread, within this call
        _request.error, _request.cause = self._get_param("error"), self._get_param("cause")
        try:
            return original_response(self)
        finally:
            _request.error = _request.cause = None

    return stop_execution


def _stop_as_in_aws(original_stop: Callable) -> Callable:
    from moto.stepfunctions.parser.api import ExecutionAbortedEventDetails, ExecutionStatus, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext

    def stop(self, stop_date: datetime.datetime, error: str | None, cause: str | None) -> None:
        error = error or getattr(_request, "error", None)
        cause = cause or getattr(_request, "cause", None)
        worker = self.exec_worker
        env = worker.env if worker is not None else None
        if env is None or self.exec_status != ExecutionStatus.RUNNING:
            original_stop(self, stop_date=stop_date, error=error, cause=cause)
            return
        events = env.event_manager
        events.add_event = _nothing_after_the_abort  # from here on, what the abandoned threads do is not recorded
        original_stop(self, stop_date=stop_date, error=error, cause=cause)
        self.exec_status = ExecutionStatus.ABORTED
        self.stop_date = stop_date
        # the worker's end would record how its skipped evaluation ended (FAILED, States.Runtime) over the abort
        worker._execution_communication._reflect_execution_status = lambda: None
        type(events).add_event(
            events,
            context=EventHistoryContext(previous_event_id=0),
            event_type=HistoryEventType.ExecutionAborted,
            event_details=EventDetails(
                executionAbortedEventDetails=ExecutionAbortedEventDetails(error=error, cause=cause)
            ),
        )
        for endpoint in list(env.callback_pool_manager._pool.values()):
            endpoint.interrupt_all()  # its callback waits end now instead of at their timeouts

    return stop


def _nothing_after_the_abort(*_args, **_kwargs) -> int:
    return 0
