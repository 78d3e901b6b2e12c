"""Fixtures for the workflow tests; the harness itself is in workflow_harness.py."""

from __future__ import annotations

import time

import pytest
from workflow_harness import open_workflow


@pytest.fixture
def workflow(monkeypatch, offline_aws_credentials):
    with open_workflow(monkeypatch.setenv) as opened:
        yield opened


@pytest.fixture(autouse=True)
def _retries_without_their_sleep(monkeypatch):
    """moto's interpreter really sleeps between the ASL's Retry attempts (2-300 s, jittered): the interval is
    recorded and the sleep shortened, so a test exercises the Retry declarations themselves in milliseconds."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    slept: list[float] = []

    class RetryClock:
        @staticmethod
        def sleep(seconds: float) -> None:
            slept.append(seconds)
            time.sleep(min(seconds, 0.01))

    monkeypatch.setattr(retrier_decl, "time", RetryClock)
    return slept


@pytest.fixture
def faults(workflow):
    """The fault-injection harness (fault_harness.py) on the workflow; the test adds its schedule and aborts."""
    from fault_harness import FaultHarness

    harness = FaultHarness(workflow)
    try:
        yield harness
    finally:
        harness.close()
