"""The workflow harness inside every patch of moto's interpreter the workflow tests run it under: one home for the
fixture (conftest.py) and the long fault-injection run (bench/fault_injection.py), which had fallen behind it (no
quiet clock for the callback waits, no StopExecution as in AWS) and failed a third of its executions on the harness,
not on the product."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from execution_ends import execution_ends_told
from interpreter_clock import callback_timeouts_when_quiet, retry_waits_shortened
from interpreter_lambda_clients import lambda_clients_kept
from workflow_harness import Workflow, open_workflow

from local_runtime.interpreter_stop import stops_as_in_aws


@contextlib.contextmanager
def open_patched_workflow(setenv: Callable[[str, str], None]) -> Iterator[Workflow]:
    """:func:`workflow_harness.open_workflow` with Retry waits shortened, Lambda clients kept, StopExecution as in
    AWS, callback waits on the quiet clock (recorded in ``callback_timeouts_asked``) and ends of executions told."""
    quiet: list[Callable[[float], bool]] = []  # the workflow's, once it exists
    with (
        retry_waits_shortened(),
        lambda_clients_kept(),
        stops_as_in_aws(),
        callback_timeouts_when_quiet(lambda timeout: bool(quiet) and quiet[0](timeout)) as timeouts_asked,
        execution_ends_told() as executions_ended,
        open_workflow(setenv) as opened,
    ):
        quiet.append(opened.quiet)
        opened.callback_timeouts_asked = timeouts_asked  # what each wait for a token asked (seconds), in order
        opened.executions_ended = executions_ended  # wakes Workflow.wait when an execution ends
        yield opened
