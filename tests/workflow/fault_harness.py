"""Fault injection over the real state machine in moto (the workflow harness, tests/workflow/workflow_harness.py).

Every AWS call a Lambda handler makes (SageMaker, S3, SNS, Step Functions) and every Lambda invoke the state
machine makes passes the dispatch seam's interceptor (local_runtime.botocore_dispatch.LocalDispatch.add_interceptor),
where a :class:`FaultSchedule` may answer it with a fault instead:

* ``throttle``      ThrottlingException (Lambda: TooManyRequestsException, 429)
* ``server_error``  a 5xx (ServiceUnavailable 503, InternalFailure 500; Lambda: ServiceException)
* ``timeout``       botocore's ReadTimeoutError, raised to the caller (Lambda: ClientExecutionTimeoutException)
* ``lambda_timeout``        Lambda's own Sandbox.Timedout before the handler ran
* ``lambda_timeout_after``  the handler ran (its AWS calls were made) but its answer was lost: Sandbox.Timedout
* ``quota``         ResourceLimitExceeded (named scenarios only: the account's instance quota, in use by other jobs)

The calls the faults reach are only the handlers' and the state machine's (the harness's own reads, the scripted
job's writes and the test's polling are left alone). A fault is transient by construction: at most
``max_in_a_row`` faults in a row for one operation, so the retries the stack declares always get through.

Events and task tokens are perturbed on their way (:class:`EventPerturbation`): a job's state change delivered
late, twice, or after the next one; and an execution may be stopped at any state (:class:`Abort`): before a
handler runs, before one of its AWS calls (the train Lambda's checkpoint copy, its CreateTrainingJob), or after
it answered. The execution's own end then reaches the execution-cleanup handler through the stack's rule, as in
the cloud.

:func:`check_invariants` (fault_invariants.py) reads what happened and lists every violation of the product's
promises; the harness records what it needs besides: the notifications SNS took and the metrics the handlers counted,
by execution.
"""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Metrics
from botocore.exceptions import ReadTimeoutError
from fault_invariants import Outcome, check_invariants
from workflow_harness import ACCOUNT, REGION, Workflow, acting_as, current_actor

from lambdas import execution_cleanup_handler
from local_runtime.botocore_dispatch import OperationCall, ServiceError

__all__ = ["Abort", "EventPerturbation", "Fault", "FaultHarness", "FaultSchedule", "Outcome", "check_invariants"]

FAULT_KINDS = ("throttle", "server_error", "timeout")
LAMBDA_FAULT_KINDS = ("throttle", "server_error", "timeout", "lambda_timeout", "lambda_timeout_after")
#: Lambda's function errors (errorType) for a function that ran out of time.
SANDBOX_TIMEDOUT = "Sandbox.Timedout"

# --------------------------------------------------------------------------- what fails


@dataclasses.dataclass(frozen=True)
class Fault:
    kind: str
    service: str
    operation: str
    actor: str
    seconds: float = 0.0


@dataclasses.dataclass
class Rule:
    """A named fault: ``kind`` on the ``service``/``operation`` calls ``when(call)`` accepts, ``times`` times after
    skipping ``skip`` of them."""

    service: str
    operation: str
    kind: str
    times: int = 1
    skip: int = 0
    when: Callable[[OperationCall], bool] | None = None
    seen: int = 0


class FaultSchedule:
    """Which calls fail, and how: named rules first, then (``rate`` > 0) a seeded random draw over every call.
    Services are named as botocore's events name them: "sagemaker", "s3", "sns", "sfn" (Step Functions),
    "lambda"."""

    def __init__(self, seed: int | None = None, rate: float = 0.0, max_in_a_row: int = 2):
        self.random = random.Random(seed)
        self.rate = rate
        self.max_in_a_row = max_in_a_row
        self.rules: list[Rule] = []
        self._in_a_row: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def add(
        self,
        service: str,
        operation: str,
        kind: str,
        times: int = 1,
        skip: int = 0,
        when: Callable[[OperationCall], bool] | None = None,
    ) -> FaultSchedule:
        self.rules.append(Rule(service, operation, kind, times, skip, when))
        return self

    def decide(self, call: OperationCall) -> str | None:
        key = (call.service, call.operation)
        with self._lock:
            for rule in self.rules:
                if (rule.service, rule.operation) != key or (rule.when is not None and not rule.when(call)):
                    continue
                rule.seen += 1
                if rule.skip < rule.seen <= rule.skip + rule.times:
                    return rule.kind
            if self.rate <= 0 or self._in_a_row.get(key, 0) >= self.max_in_a_row:
                self._in_a_row[key] = 0
                return None
            if self.random.random() >= self.rate:
                self._in_a_row[key] = 0
                return None
            self._in_a_row[key] = self._in_a_row.get(key, 0) + 1
            kinds = LAMBDA_FAULT_KINDS if key == ("lambda", "Invoke") else FAULT_KINDS
            return self.random.choice(kinds)


def _fault_error(kind: str, call: OperationCall) -> Exception:
    lambda_call = call.service == "lambda"
    if kind == "throttle":
        if lambda_call:
            return ServiceError("TooManyRequestsException", "Rate Exceeded.", status_code=429)
        code = "SlowDown" if call.service == "s3" else "ThrottlingException"
        return ServiceError(code, "Rate exceeded", status_code=503 if call.service == "s3" else 400)
    if kind == "server_error":
        if lambda_call:
            return ServiceError("ServiceException", "Lambda encountered an internal error", status_code=500)
        return ServiceError("ServiceUnavailable", "Service is unavailable, try again", status_code=503)
    if kind == "quota":  # the account's instance quota in use by other jobs: passes in minutes
        return ServiceError(
            "ResourceLimitExceeded",
            "The account-level service limit 'ml.m5.xlarge for training job usage' is 2 Instances, with current "
            "utilization of 2 Instances and a request delta of 1 Instances.",
        )
    if kind == "timeout":
        if lambda_call:
            return ServiceError("ClientExecutionTimeoutException", "Client execution did not complete", status_code=500)
        return ReadTimeoutError(endpoint_url=f"https://{call.service}.{call.region}.amazonaws.com/")
    raise ValueError(f"not a call fault: {kind}")


# --------------------------------------------------------------------------- stopping an execution mid-way


@dataclasses.dataclass
class Abort:
    """Stop the execution (StopExecution) at one moment: ``function`` is the handler ("train", "monitor",
    "plan", "job_events"); ``moment`` is "before" (it runs), "after" (it answered) or an operation it calls
    ("CreateTrainingJob", "CopyObject", "ListObjectsV2", ...: just before that call goes out). ``occurrence``
    counts invocations (1: the first). ``action`` (when given) runs there instead of the stop, on the handler's
    thread, which goes on when it returns."""

    function: str
    moment: str = "before"
    occurrence: int = 1
    fired: bool = False
    seen: int = 0
    action: Callable[[], None] | None = None
    #: The execution was running at that moment and was stopped (a moment reached after it ended stops nothing).
    stopped: bool = False


# --------------------------------------------------------------------------- events on their way


@dataclasses.dataclass
class EventPerturbation:
    """How EventBridge delivers the jobs' state changes: ``late_seconds`` later, ``duplicate`` (twice), or
    ``reorder`` (held back until the next event has gone)."""

    late_seconds: float = 0.0
    duplicate: bool = False
    reorder: bool = False


class FaultHarness:
    """Faults, aborts and event perturbations installed on a :class:`Workflow` (before its executions start)."""

    FUNCTIONS = {
        "remediation-train": "train",
        "remediation-monitor": "monitor",
        "remediation-plan": "plan",
        "remediation-job-events": "job_events",
    }

    def __init__(self, workflow: Workflow, schedule: FaultSchedule | None = None):
        self.workflow = workflow
        self.schedule = schedule or FaultSchedule()
        self.injected: list[Fault] = []
        self.aborts: list[Abort] = []
        self.events = EventPerturbation()
        self.in_flight: dict[str, int] = {}
        self._in_flight_lock = threading.Condition()
        self._held_event: dict[str, Any] | None = None
        self._lambda_fault = threading.local()
        self._wrap_handlers()
        workflow.events.wrap_target("JobStateChange", self._as_actor("job_events"))
        workflow.dispatch.add_interceptor(self._intercept)
        self._wrap_event_bus()
        workflow.add_execution_cleanup_rule(workflow.state_machine_arn, wrapper=self._as_actor("execution_cleanup"))
        # The cleanup's second look waits for the train Lambda's timeout in the cloud; here, for the train handlers
        # still running to return (what that timeout guarantees).
        self._cleanup_looked = threading.Event()
        self._delivered: set[str] = set()
        self._saved_settle = execution_cleanup_handler.settle_launch
        execution_cleanup_handler.settle_launch = self._settle_launch
        # The cleanup's pause between its own tries (2 s, doubling): recorded, not slept.
        self.cleanup_pauses: list[float] = []
        self._saved_pause = getattr(execution_cleanup_handler, "pause", None)
        execution_cleanup_handler.pause = self.cleanup_pauses.append
        # The handlers' metrics, by the handler that emitted them (what the stack's alarms read).
        self.metrics: list[tuple[str | None, str, float]] = []
        self.metrics_by_execution: list[tuple[str | None, str, float]] = []
        #: Every notification SNS took (no fault answered it), by the execution the harness was running.
        self.published: list[tuple[str | None, dict[str, Any]]] = []
        self._saved_add_metric = Metrics.add_metric
        harness = self

        def add_metric(metrics_self: Any, name: str, unit: Any, value: float, *args: Any, **kwargs: Any) -> None:
            harness.metrics.append((current_actor(), name, value))
            harness.metrics_by_execution.append((harness.workflow.execution_arn, name, value))
            return harness._saved_add_metric(metrics_self, name, unit, value, *args, **kwargs)

        Metrics.add_metric = add_metric

    def metric_count(self, name: str) -> float:
        return sum(value for _, metric, value in self.metrics if metric == name)

    def metric_count_since(self, execution_arn: str, name: str) -> float:
        """What the handlers counted of ``name`` while ``execution_arn`` was the harness's execution."""
        return sum(value for arn, metric, value in self.metrics_by_execution if arn == execution_arn and metric == name)

    def published_since(self, execution_arn: str) -> list[dict[str, Any]]:
        return [message for arn, message in self.published if arn == execution_arn]

    def close(self) -> None:
        Metrics.add_metric = self._saved_add_metric
        execution_cleanup_handler.settle_launch = self._saved_settle
        if self._saved_pause is not None:
            execution_cleanup_handler.pause = self._saved_pause
        self.workflow.dispatch.remove_interceptor(self._intercept)

    # ------------------------------------------------------------------ wiring

    def _wrap_handlers(self) -> None:
        dispatch = self.workflow.dispatch
        for name, handler in dispatch.lambda_functions().items():
            actor = self.FUNCTIONS.get(name, name)
            dispatch.register_lambda_function(
                name, self._invocation(actor, handler), timeout_seconds=dispatch.lambda_timeout(name)
            )

    def _as_actor(self, actor: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(handler: Callable[..., Any]) -> Callable[..., Any]:
            invocation = self._invocation(actor, handler)
            if actor != "execution_cleanup":
                return invocation

            def cleanup(event: Any, context: Any) -> Any:
                try:
                    return invocation(event, context)
                finally:
                    self._cleanup_looked.set()

            return cleanup

        return wrap

    def _settle_launch(self, _until: float) -> None:
        self._cleanup_looked.set()  # its first look is done
        self.wait_for_lambdas("train")

    def _invocation(self, actor: str, handler: Callable[..., Any]) -> Callable[..., Any]:
        def invoke(event: Any, context: Any) -> Any:
            with self._in_flight_lock:
                self.in_flight[actor] = self.in_flight.get(actor, 0) + 1
            fault, self._lambda_fault.kind = getattr(self._lambda_fault, "kind", None), None
            try:
                if fault == "lambda_timeout":
                    raise _sandbox_timedout("Task timed out before the handler answered")
                self._maybe_abort(actor, "before")
                with acting_as(actor):
                    result = handler(event, context)
                self._maybe_abort(actor, "after")
                if fault == "lambda_timeout_after":
                    raise _sandbox_timedout("Task timed out: the handler's work was done but its answer was lost")
                return result
            finally:
                with self._in_flight_lock:
                    self.in_flight[actor] -= 1
                    self._in_flight_lock.notify_all()

        return invoke

    def _wrap_event_bus(self) -> None:
        bus = self.workflow.events
        put = bus.put

        def perturbed_put(event: dict[str, Any], delay_seconds: float = 0.0) -> None:
            if event.get("source") != "aws.sagemaker":
                return put(event, delay_seconds)
            delay = delay_seconds + self.events.late_seconds
            if self.events.reorder:
                held, self._held_event = self._held_event, event
                if held is None:
                    # Released by the next event, or after a while if none comes (EventBridge delivers eventually).
                    threading.Timer(1.5, self._release_held, args=(put, event)).start()
                    return None
                put(event, delay)
                return put(held, delay)
            put(event, delay)
            if self.events.duplicate:
                put(event, delay + 0.05)
            return None

        bus.put = perturbed_put
        self.workflow.under_way.append(lambda: self._held_event is not None)  # it may yet complete a wait

    def _release_held(self, put: Callable[..., Any], event: dict[str, Any]) -> None:
        if self._held_event is event:
            self._held_event = None
            put(event)

    # ------------------------------------------------------------------ faults

    def _intercept(self, call: OperationCall) -> None:
        actor = current_actor()
        invoked_by_the_state_machine = (call.service, call.operation) == ("lambda", "Invoke") and actor is None
        if actor is None and not invoked_by_the_state_machine:
            return  # the harness's own call
        if actor is not None:
            self._maybe_abort(actor, call.operation)
        kind = self.schedule.decide(call)
        if kind is None:
            if (call.service, call.operation) == ("sns", "Publish"):
                self.published.append((self.workflow.execution_arn, json.loads(call.params["Message"])))
            return
        self.injected.append(Fault(kind, call.service, call.operation, actor or "states"))
        if kind in ("lambda_timeout", "lambda_timeout_after"):
            self._lambda_fault.kind = kind  # the invoked handler's wrapper, on this thread, answers it
            return
        raise _fault_error(kind, call)

    # ------------------------------------------------------------------ aborts

    def abort(self, function: str, moment: str = "before", occurrence: int = 1) -> Abort:
        planned = Abort(function, moment, occurrence)
        self.aborts.append(planned)
        return planned

    def at(self, function: str, moment: str, action: Callable[[], None], occurrence: int = 1) -> Abort:
        """Run ``action`` at that moment of that handler (see :class:`Abort`)."""
        planned = Abort(function, moment, occurrence, action=action)
        self.aborts.append(planned)
        return planned

    def first_look_done(self) -> threading.Event:
        """Set when a cleanup (the Lambda's, or one the test runs through settle_launch) has had its first look."""
        return self._cleanup_looked

    def settle_launch(self, _until: float) -> None:
        """What waiting out the train Lambda's timeout guarantees: no train handler still runs."""
        self._settle_launch(_until)

    def _maybe_abort(self, actor: str, moment: str) -> None:
        for planned in self.aborts:
            if planned.fired or planned.function != actor or planned.moment != moment:
                continue
            planned.seen += 1
            if planned.seen != planned.occurrence:
                continue
            planned.fired = True
            if planned.action is not None:
                with acting_as(None):
                    planned.action()
                continue
            arn = self.workflow.execution_arn
            with acting_as(None):
                status = self.workflow.sfn.describe_execution(executionArn=arn)["status"]
                if status == "RUNNING":
                    # The stack's rule delivers the execution's end to the cleanup; the handler goes on only once
                    # the cleanup has had its first look (the worst order for a launch under way).
                    self._cleanup_looked.clear()
                    self.workflow.stop(arn, error="UserStop", cause=f"fault harness: stopped at {actor} {moment}")
                    planned.stopped = True
                    self.workflow.wait(arn, timeout=30)
                    self.deliver_execution_end(arn)
                    if not self._cleanup_looked.wait(30):
                        raise AssertionError("the execution-cleanup handler never looked")

    # ------------------------------------------------------------------ the execution's end

    def deliver_execution_end(self, arn: str) -> None:
        """Step Functions' status change of the ended execution, through the stack's rule (to the cleanup when it
        ended FAILED, TIMED_OUT or ABORTED); delivered once per execution."""
        with self._in_flight_lock:
            if arn in self._delivered:
                return
            self._delivered.add(arn)
        with acting_as(None):
            self.workflow.events.put(
                _execution_status_change(self.workflow.sfn.describe_execution(executionArn=arn))
            )

    def wait_for_lambdas(self, function: str | None = None, timeout: float = 60.0) -> None:
        """Until no handler (or none of ``function``) is running: what a Lambda's timeout guarantees."""
        deadline = time.monotonic() + timeout
        with self._in_flight_lock:
            while any(count for name, count in self.in_flight.items() if function in (None, name)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"Lambda handlers still running after {timeout} s: {self.in_flight}")
                self._in_flight_lock.wait(left)

    def settle(self, arn: str) -> None:
        """After the execution ended: its end delivered, every handler returned, every event delivered."""
        self.deliver_execution_end(arn)
        for _ in range(3):
            self.wait_for_lambdas()
            self.workflow.events.drain(timeout=30)
        self.wait_for_lambdas()


def _sandbox_timedout(message: str) -> Exception:
    timed_out = type(SANDBOX_TIMEDOUT, (Exception,), {})  # Lambda's errorType for a function past its timeout
    return timed_out(message)


def _execution_status_change(description: dict[str, Any]) -> dict[str, Any]:
    from local_runtime.event_bus import execution_status_change_event

    return execution_status_change_event(description, REGION, ACCOUNT)

