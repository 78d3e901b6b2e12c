"""Every AWS call inside a Lambda has a time budget well inside the Lambda's timeout (finding 3 of issue 23): a call
used to be allowed 8 tries of up to 60 s each inside a 60 s Lambda, so a slow service killed the Lambda half-way."""

from __future__ import annotations

import dataclasses

import pytest

from contracts import time_budgets
from lambdas.remediation import handler_support


def test_one_call_fits_well_inside_every_lambdas_timeout():
    budget = time_budgets.CALL_BUDGET
    for name, timeout in time_budgets.LAMBDA_TIMEOUT_SECONDS.items():
        assert budget.worst_case_seconds <= (timeout - time_budgets.DEADLINE_MARGIN_SECONDS) * 0.8, name
    # what it was: 8 tries of 10 s connect + 60 s read, with standard mode's backoff between them
    before = time_budgets.CallBudget(attempts=8, connect_seconds=10, read_seconds=60)
    assert before.worst_case_seconds > 8 * time_budgets.MONITOR_TIMEOUT_SECONDS


def test_the_clients_are_configured_with_the_budget():
    config = handler_support.CLIENT_CONFIG
    budget = time_budgets.CALL_BUDGET
    assert config.retries == {"mode": "standard", "total_max_attempts": budget.attempts}
    assert (config.connect_timeout, config.read_timeout) == (budget.connect_seconds, budget.read_seconds)


@dataclasses.dataclass
class Context:
    seconds: float

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


def test_no_call_goes_out_past_the_invocations_deadline(monkeypatch, offline_aws_credentials):
    clock = [1000.0]
    monkeypatch.setattr(handler_support, "monotonic", lambda: clock[0])
    handler_support.begin_invocation(Context(seconds=30))  # deadline: 30 s less the margin
    assert handler_support.seconds_left() == 30 - time_budgets.DEADLINE_MARGIN_SECONDS
    clock[0] += 30 - time_budgets.DEADLINE_MARGIN_SECONDS + 0.1
    s3 = handler_support.client("s3", "us-east-1")
    with pytest.raises(handler_support.DeadlineExceeded) as caught:
        s3.list_objects_v2(Bucket="artifacts-bucket")  # refused before anything is sent (no endpoint is reachable)
    assert handler_support.is_transient(caught.value)  # handed back to the state machine as a retry, never acted on
    assert "ListObjectsV2: not attempted" in str(caught.value)


def test_a_kept_client_holds_each_later_invocation_to_its_own_deadline(monkeypatch, offline_aws_credentials):
    """The handlers keep their clients between invocations (as a warm Lambda does): the deadline a kept client
    enforces is the invocation's that calls it, not the one's that made it."""
    clock = [1000.0]
    monkeypatch.setattr(handler_support, "monotonic", lambda: clock[0])
    handler_support.begin_invocation(Context(seconds=900))  # the invocation that makes the client: far from its end
    made = handler_support.client("s3", "us-east-1")
    handler_support.begin_invocation(Context(seconds=30))  # a later one, past its deadline below
    clock[0] += 30 - time_budgets.DEADLINE_MARGIN_SECONDS + 0.1
    kept = handler_support.client("s3", "us-east-1")
    assert kept is made
    with pytest.raises(handler_support.DeadlineExceeded, match="ListObjectsV2: not attempted"):
        kept.list_objects_v2(Bucket="artifacts-bucket")
    # kept per service, region and read timeout; forgotten when the account behind them changes
    assert handler_support.client("s3", "eu-west-1") is not made
    assert handler_support.client("s3", "us-east-1", read_timeout=600) is not made
    handler_support.forget_clients()
    assert handler_support.client("s3", "us-east-1") is not made


def test_outside_an_invocation_there_is_no_deadline(monkeypatch):
    monkeypatch.setattr(handler_support, "_invocation", type("Fresh", (), {})())
    assert handler_support.seconds_left() is None
    handler_support.check_deadline("anything")  # does not raise


def test_the_first_client_made_before_any_boto3_session_is_kept(monkeypatch, offline_aws_credentials):
    """A Lambda's first invocation makes its clients before boto3 has a default session: the client is still found
    again by the next call (it was keyed on "no session yet" and never reused: order-dependent in the suite)."""
    import boto3

    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    handler_support.forget_clients()
    made = handler_support.client("s3", "us-east-1")
    assert handler_support.client("s3", "us-east-1") is made
