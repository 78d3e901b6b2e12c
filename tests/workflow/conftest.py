"""Fixtures for the workflow tests; the harness itself is in workflow_harness.py."""

from __future__ import annotations

import pytest
from execution_ends import execution_ends_told
from interpreter_clock import callback_timeouts_when_quiet, retry_waits_shortened
from interpreter_lambda_clients import lambda_clients_kept
from workflow_harness import open_workflow

from local_runtime.interpreter_stop import stops_as_in_aws


@pytest.fixture
def workflow(monkeypatch, offline_aws_credentials, asl_parsed_once, sns_signing_key_made_once):
    quiet = []  # the workflow's, once it exists
    with (
        retry_waits_shortened(),
        lambda_clients_kept(),
        stops_as_in_aws(),
        callback_timeouts_when_quiet(lambda timeout: bool(quiet) and quiet[0](timeout)) as timeouts_asked,
        execution_ends_told() as executions_ended,
        open_workflow(monkeypatch.setenv) as opened,
    ):
        quiet.append(opened.quiet)
        opened.callback_timeouts_asked = timeouts_asked  # what each wait for a token asked (seconds), in order
        opened.executions_ended = executions_ended  # wakes Workflow.wait when an execution ends
        yield opened


@pytest.fixture
def faults(workflow):
    """The fault-injection harness (fault_harness.py) on the workflow; the test adds its schedule and aborts."""
    from fault_harness import FaultHarness

    harness = FaultHarness(workflow)
    try:
        yield harness
    finally:
        harness.close()
