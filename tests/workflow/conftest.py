"""Fixtures for the workflow tests; the harness itself is in workflow_harness.py."""

from __future__ import annotations

import pytest
from patched_workflow import open_patched_workflow


@pytest.fixture
def workflow(monkeypatch, offline_aws_credentials, asl_parsed_once, sns_signing_key_made_once):
    with open_patched_workflow(monkeypatch.setenv) as opened:
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
