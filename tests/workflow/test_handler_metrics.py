"""The LambdaErrors alarm reads what the handlers count themselves as they raise (finding 6 of issue 45): it used to
subtract TransientFaultsDeferred from Lambda's Errors, and for a long invocation (the cleanup runs up to 435 s) the two
fell in different 5-minute periods: a false alarm in one, a masked error in the next. Now an error is counted once, in
the period it happened: an unhandled one as UnhandledErrors, a transient fault handed back for a retry as
TransientFaultsDeferred (not alarmed), an expected refusal not at all."""

from __future__ import annotations

import pytest

from lambdas import job_events_handler, plan_handler
from lambdas.remediation import handler_support
from lambdas.remediation.job.running_executions import ConcurrentExecutionsLimit
from lambdas.remediation.state import end_causes
from local_runtime.botocore_dispatch import LambdaContext


class Recorded:
    def __init__(self):
        self.names: list[str] = []

    def add_metric(self, name, unit, value):
        self.names.append(name)


@pytest.mark.parametrize(
    ("raised", "counted"),
    [
        (KeyError("state"), [end_causes.UNHANDLED_ERRORS]),
        (handler_support.AwsTransientError("throttled"), [end_causes.TRANSIENT_FAULTS_DEFERRED]),
        (ConcurrentExecutionsLimit("max_concurrent_executions: ..."), []),  # an expected refusal: ended and notified
        (ValueError("a bug"), [end_causes.UNHANDLED_ERRORS]),
    ],
)
def test_a_handler_counts_what_it_raises_as_it_raises_it(raised, counted):
    metrics = Recorded()

    @handler_support.counting_errors(metrics)
    def handler(event, context):
        raise raised

    with pytest.raises(type(raised)):
        handler({}, None)
    assert metrics.names == counted


def context(name: str) -> LambdaContext:
    return LambdaContext(function_name=name, invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}", aws_request_id="r")


def test_the_real_handlers_count_a_crash_and_not_a_refused_input(monkeypatch):
    counted: list[str] = []
    for module in (plan_handler, job_events_handler):
        monkeypatch.setattr(module.metrics, "add_metric", lambda name, unit, value, **kw: counted.append(name))
    # a refused execution input is an expected end (InvalidExecutionInput): not an unhandled error
    with pytest.raises(Exception) as refused:
        plan_handler.handler({"action": "initialize", "execution_input": {"learning_rate": -1}}, context("plan"))
    assert type(refused.value).__name__ == "InvalidExecutionInput" and counted == []
    # a crash inside a handler is
    monkeypatch.setattr(job_events_handler, "wait_for_job", lambda event: {}["missing"])
    with pytest.raises(KeyError):
        job_events_handler.handler({"action": "wait_for_job"}, context("job-events"))
    assert counted == [end_causes.UNHANDLED_ERRORS]
