"""StopExecution in moto's Step Functions interpreter, made what AWS does: the execution is ABORTED at once and its
history ends with ExecutionAborted.

moto 5.2's StopExecution only marks the execution's environment stopped. The state in flight goes on evaluating on
its worker threads, and every part of it evaluated after the stop is skipped ("pruned") while the code around it
still pops the value that part should have pushed. A stop that lands while a state is being evaluated rather than
while it waits (a user can stop at any moment) so reads the wrong values: the state's input where WaitForJob's
timeout belongs (a TaskScheduled event whose timeoutInSeconds is a dict, which GetExecutionHistory then fails to
serialize: TypeError; or ``Event.wait(dict)``: "'>' not supported between instances of 'dict' and 'int'"), or an
empty stack ("pop from empty list"); the execution then ends FAILED with States.Runtime over the abort.
tests/workflow/test_execution_cleanup.py forces those interleavings. While :func:`stops_as_in_aws` is open, a stop
ends the execution's record at once: status ABORTED (with the stop's error and cause), the history closed by
ExecutionAborted, nothing the abandoned threads do added after it, and its callback waits released so no thread
waits out a timeout for nothing. What the state in flight had already done (a Lambda under way runs to its end, as
in AWS) stays done.

The patch point is moto 5.2's parser Execution.stop; it is checked, so a moto upgrade that moves it fails here.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator


@contextlib.contextmanager
def stops_as_in_aws() -> Iterator[None]:
    from moto.stepfunctions.parser.api import ExecutionAbortedEventDetails, ExecutionStatus, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext
    from moto.stepfunctions.parser.backend import execution as execution_module

    execution_class = execution_module.Execution
    if not callable(getattr(execution_class, "stop", None)):
        raise AssertionError(f"moto's interpreter moved {execution_module.__name__}.Execution.stop: update {__name__}")
    original_stop = execution_class.stop

    def stop(self, stop_date: datetime.datetime, error: str | None, cause: str | None) -> None:
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

    execution_class.stop = stop
    try:
        yield
    finally:
        execution_class.stop = original_stop


def _nothing_after_the_abort(*_args, **_kwargs) -> int:
    return 0
