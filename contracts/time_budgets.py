"""How long each Lambda may run and how long one AWS call may take inside it, stated once. Standard library only.

The stack gives each function its timeout from :data:`LAMBDA_TIMEOUT_SECONDS`; the handlers bound every AWS call
by :data:`CALL_BUDGET` and stop calling when their invocation's deadline (its timeout less
:data:`DEADLINE_MARGIN_SECONDS`) is near, so a throttled or slow service ends in ``AwsTransientError`` (which the
state machine retries with backoff), never in a Lambda killed half-way. The execution-cleanup Lambda waits out
the train Lambda's timeout before its second look (:func:`launch_settled_after`): a train Lambda still running
when its execution was stopped may create its job after the cleanup's first look.
"""

from __future__ import annotations

import dataclasses

#: Each function's timeout (seconds). Train copies checkpoints before it launches (server-side CopyObject of up to
#: 200 files): it gets the longest loop budget. The cleanup waits for a train Lambda that may still run.
TRAIN_TIMEOUT_SECONDS = 300
MONITOR_TIMEOUT_SECONDS = 60
PLAN_TIMEOUT_SECONDS = 60
JOB_EVENTS_TIMEOUT_SECONDS = 60
#: Seconds the cleanup waits, past the train Lambda's timeout, before it looks again for a job being launched.
LAUNCH_SETTLE_MARGIN_SECONDS = 15
EXECUTION_CLEANUP_TIMEOUT_SECONDS = TRAIN_TIMEOUT_SECONDS + LAUNCH_SETTLE_MARGIN_SECONDS + 120
LAMBDA_TIMEOUT_SECONDS = {
    "train": TRAIN_TIMEOUT_SECONDS,
    "monitor": MONITOR_TIMEOUT_SECONDS,
    "plan": PLAN_TIMEOUT_SECONDS,
    "job_events": JOB_EVENTS_TIMEOUT_SECONDS,
    "execution_cleanup": EXECUTION_CLEANUP_TIMEOUT_SECONDS,
}
#: A handler stops making AWS calls this long before its timeout: time to answer (or raise AwsTransientError).
DEADLINE_MARGIN_SECONDS = 8
#: The train Lambda keeps this long for the launch itself when it copies checkpoints first.
LAUNCH_RESERVE_SECONDS = 60


@dataclasses.dataclass(frozen=True)
class CallBudget:
    """One AWS call: botocore's standard retry mode, at most ``attempts`` tries of at most ``connect_seconds`` +
    ``read_seconds`` each, with at most ``max_backoff_seconds`` between two (standard mode's cap is 20 s; its
    delays are ``random() * 2 ** attempt`` seconds)."""

    attempts: int
    connect_seconds: float
    read_seconds: float

    @property
    def max_backoff_seconds(self) -> float:
        return sum(min(20.0, 2.0**attempt) for attempt in range(1, self.attempts))

    @property
    def worst_case_seconds(self) -> float:
        return self.attempts * (self.connect_seconds + self.read_seconds) + self.max_backoff_seconds


#: Every call the handlers make (the deadline cuts a call's retries short before the Lambda's timeout).
CALL_BUDGET = CallBudget(attempts=3, connect_seconds=2.0, read_seconds=8.0)
#: CopyObject of a large checkpoint file answers only when the copy is done: its read may take up to this long.
COPY_READ_SECONDS = 120.0


def launch_settled_after(stop_epoch_seconds: float, train_timeout_seconds: float = TRAIN_TIMEOUT_SECONDS) -> float:
    """When a train Lambda still running as its execution stopped has certainly ended (Lambda ends it at its
    timeout): the moment the cleanup looks again for the job it may have created."""
    return stop_epoch_seconds + train_timeout_seconds + LAUNCH_SETTLE_MARGIN_SECONDS
