"""What plays EventBridge on one machine: rules (an event pattern and a target handler) and events delivered to
every rule whose pattern matches, asynchronously, as EventBridge invokes a Lambda target.

The patterns are the stack's own (``lambdas.remediation.job.job_events``) and are matched by moto's EventBridge
pattern matcher, not by code of ours. The events are built in the services' shapes:
:func:`training_job_state_change_event` from a DescribeTrainingJob answer (the local training platform emits
one when a job's status changes) and :func:`execution_status_change_event` from a DescribeExecution answer
(:meth:`LocalEventBus.watch_execution` emits it when the execution ends).

    bus = LocalEventBus(region="us-east-1", account="123456789012")
    bus.add_rule("JobStateChange", training_job_state_change_pattern("remediation"), job_events_handler.handler)
    bus.put(training_job_state_change_event(described, region, account))
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from moto.events.models import EventPattern, EventPatternParser

from lambdas.remediation.job.job_events import EXECUTION_STATUS_CHANGE, TRAINING_JOB_STATE_CHANGE
from local_runtime.botocore_dispatch import LambdaContext

LOGGER = logging.getLogger(__name__)
Target = Callable[[dict[str, Any], Any], Any]
#: Lambda retries a failed asynchronous invocation twice.
ASYNC_INVOKE_ATTEMPTS = 3


@dataclasses.dataclass
class Delivery:
    rule: str
    event: dict[str, Any]
    result: Any = None
    error: str | None = None


@dataclasses.dataclass
class _Rule:
    name: str
    pattern: EventPattern
    target: Target


class LocalEventBus:
    """Rules and a delivery thread. ``deliveries`` records each target call (rule, event, result or error)."""

    def __init__(self, region: str, account: str):
        self.region = region
        self.account = account
        self.deliveries: list[Delivery] = []
        self._rules: list[_Rule] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._lock = threading.Lock()
        self._delayed = 0  # events put with a delay that has not passed yet
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._deliver_forever, name="local-event-bus", daemon=True)
        self._thread.start()

    def add_rule(self, name: str, pattern: Mapping[str, Any], target: Target) -> None:
        raw = json.dumps(pattern)
        parsed = EventPatternParser(raw).parse()  # refuses what EventBridge refuses (an empty list, a bare value)
        with self._lock:
            self._rules.append(_Rule(name, EventPattern(raw, parsed), target))

    def wrap_target(self, name: str, wrapper: Callable[[Target], Target]) -> None:
        """Put ``wrapper(target)`` in place of rule ``name``'s target (a test's view of each delivery)."""
        with self._lock:
            for rule in self._rules:
                if rule.name == name:
                    rule.target = wrapper(rule.target)

    def put(self, event: Mapping[str, Any], delay_seconds: float = 0.0) -> None:
        """Deliver ``event`` (after ``delay_seconds``) to every matching rule's target; returns at once."""
        if self._closed.is_set():
            return
        if delay_seconds > 0:
            with self._lock:
                self._delayed += 1
            timer = threading.Timer(delay_seconds, self._put_delayed, args=(dict(event),))
            timer.daemon = True
            timer.start()
        else:
            self._queue.put(dict(event))

    def _put_delayed(self, event: dict[str, Any]) -> None:
        self._queue.put(event)  # queued before it stops counting as delayed: idle() never misses it
        with self._lock:
            self._delayed -= 1

    def idle(self) -> bool:
        """No event put is still waiting for its delay, queued, or being delivered."""
        with self._lock:
            delayed = self._delayed
        return delayed == 0 and self._queue.unfinished_tasks == 0

    def matching_rules(self, event: Mapping[str, Any]) -> list[str]:
        with self._lock:
            return [rule.name for rule in self._rules if rule.pattern.matches_event(dict(event))]

    def watch_execution(self, describe: Callable[[], Mapping[str, Any]], poll_seconds: float = 0.5) -> None:
        """Emit the execution's "Step Functions Execution Status Change" when it leaves RUNNING."""

        def watch() -> None:
            while not self._closed.is_set():
                try:
                    description = describe()
                except Exception:  # noqa: BLE001 - the mock is going away; nothing left to watch
                    return
                if description.get("status") != "RUNNING":
                    self.put(execution_status_change_event(description, self.region, self.account))
                    return
                time.sleep(poll_seconds)

        threading.Thread(target=watch, name="local-execution-watch", daemon=True).start()

    def drain(self, timeout: float = 10.0) -> None:
        """Wait until every event put so far has been delivered."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self) -> None:
        self._closed.set()
        self._queue.put(None)
        self._thread.join(timeout=10)

    def _deliver_forever(self) -> None:
        while True:
            event = self._queue.get()
            try:
                if event is None:
                    return
                with self._lock:
                    rules = [rule for rule in self._rules if rule.pattern.matches_event(event)]
                for rule in rules:
                    self._invoke(rule, event)
            finally:
                self._queue.task_done()

    def _invoke(self, rule: _Rule, event: dict[str, Any]) -> None:
        delivery = Delivery(rule.name, event)
        for attempt in range(ASYNC_INVOKE_ATTEMPTS):
            context = LambdaContext(
                function_name=rule.name,
                invoked_function_arn=f"arn:aws:lambda:{self.region}:{self.account}:function:{rule.name}",
                aws_request_id=str(uuid.uuid4()),
            )
            try:
                delivery.result, delivery.error = rule.target(event, context), None
                break
            except Exception as error:  # noqa: BLE001 - an asynchronous target's failure is retried, then recorded
                delivery.error = f"{type(error).__name__}: {error}"
                LOGGER.warning("rule %s: target failed (attempt %d): %s", rule.name, attempt + 1, delivery.error)
        with self._lock:
            self.deliveries.append(delivery)


def _event(source: str, detail_type: str, detail: dict[str, Any], region: str, account: str, resources: list[str]):
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": account,
        "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": resources,
        "detail": detail,
    }


def _epoch_millis(value: Any) -> Any:
    """Events carry times as epoch milliseconds; nested structures are converted throughout."""
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, Mapping):
        return {key: _epoch_millis(item) for key, item in value.items() if key != "ResponseMetadata"}
    if isinstance(value, list):
        return [_epoch_millis(item) for item in value]
    return value


def training_job_state_change_event(described: Mapping[str, Any], region: str, account: str) -> dict[str, Any]:
    """SageMaker's event for a job's status change: its detail is the job's description."""
    detail = _epoch_millis(described)
    return _event("aws.sagemaker", TRAINING_JOB_STATE_CHANGE, detail, region, account, [described["TrainingJobArn"]])


def execution_status_change_event(description: Mapping[str, Any], region: str, account: str) -> dict[str, Any]:
    """Step Functions' event for an execution's status change."""
    detail = {
        "executionArn": description["executionArn"],
        "stateMachineArn": description["stateMachineArn"],
        "name": description.get("name"),
        "status": description["status"],
        "startDate": _epoch_millis(description.get("startDate")),
        "stopDate": _epoch_millis(description.get("stopDate")),
        "input": description.get("input"),
        "output": description.get("output"),
    }
    return _event("aws.states", EXECUTION_STATUS_CHANGE, detail, region, account, [description["executionArn"]])
