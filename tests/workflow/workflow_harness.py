"""The workflow harness (fixture in conftest.py): moto's Step Functions interpreter runs statemachine/remediation.asl.json,
lambda.Invoke runs the real handlers in-process through local_runtime.botocore_dispatch, and a
scripted SageMaker (registered through the same seam) plays each job's timeline. S3, SNS and SQS
are moto's; notifications are read back from an SQS queue subscribed to the topic.

Time passes for a scripted job while the workflow waits for it: each WaitForJob moves the job to
the next tick of its timeline. A tick with a final status (Completed, Failed, Stopped) sends the
job's "SageMaker Training Job State Change" event ``after_seconds`` later, through the stack's
event pattern (matched by moto's EventBridge matcher) to the real job-events handler, which wakes
the wait; a tick that is still InProgress sends nothing, so the wait ends by its fallback timeout
(monitor_interval_seconds)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import pathlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
from execution_ends import Ended

from contracts import aws_tags, bucket_layout, rule_selection, rule_status, time_budgets
from contracts import job as job_contract
from lambdas.remediation.job import job_events
from local_runtime.botocore_dispatch import LocalDispatch, OperationCall, ServiceError
from local_runtime.event_bus import (
    LocalEventBus,
    execution_status_change_event,
    training_job_state_change_event,
)

REGION = "us-east-1"
ACCOUNT = "123456789012"
BUCKET = "remediation-artifacts"
ASL_PATH = pathlib.Path(__file__).resolve().parents[2] / "statemachine" / "remediation.asl.json"
FUNCTION_ARNS = {
    "TrainFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:remediation-train",
    "MonitorFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:remediation-monitor",
    "PlanFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:remediation-plan",
    "JobEventsFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:remediation-job-events",
}
JOB_NAME_PREFIX = "remediation"
BASE_INPUT = {
    "bucket": BUCKET,
    "region": REGION,
    "sm_role": f"arn:aws:iam::{ACCOUNT}:role/SageMakerExecutionRole",
    # The wait's fallback timeout: the shortest Step Functions takes. Only a tick still InProgress waits for it.
    "monitor_interval_seconds": 1,
    # The Wait states before a capacity relaunch and before looking again at rules still evaluating: moto sleeps.
    "capacity_wait_seconds": 0,
    "rule_wait_seconds": 0,
}


@contextlib.contextmanager
def open_workflow(setenv: Callable[[str, str], None]) -> Iterator[Workflow]:
    """moto's account (S3, SNS, SQS, Step Functions executing the ASL) with the real handlers behind lambda.Invoke,
    and the Workflow that drives it; ``setenv`` sets the handlers' environment (pytest's monkeypatch.setenv)."""
    from moto import mock_aws

    from lambdas import monitor_handler, plan_handler, train_handler

    for key, value in {
        "AWS_DEFAULT_REGION": REGION,
        "JOB_NAME_PREFIX": JOB_NAME_PREFIX,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "ARTIFACTS_BUCKET": BUCKET,
        # as the stack: each execution's jobs write their evidence under its secret prefixes
        "SECRET_EVIDENCE_PATHS": "on",
    }.items():
        setenv(key, value)
    dispatch = LocalDispatch()
    timeouts = time_budgets.LAMBDA_TIMEOUT_SECONDS
    dispatch.register_lambda_function(FUNCTION_ARNS["TrainFunctionArn"], train_handler.handler, timeouts["train"])
    dispatch.register_lambda_function(FUNCTION_ARNS["MonitorFunctionArn"], monitor_handler.handler, timeouts["monitor"])
    dispatch.register_lambda_function(FUNCTION_ARNS["PlanFunctionArn"], plan_handler.handler, timeouts["plan"])
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        clients = _harness_clients()  # before the dispatch is installed: they carry none of its handlers
        with dispatch:
            clients["s3"].create_bucket(Bucket=BUCKET)
            sns, sqs = clients["sns"], clients["sqs"]
            topic_arn = sns.create_topic(Name="remediation-notifications")["TopicArn"]
            queue_url = sqs.create_queue(QueueName="notifications")["QueueUrl"]
            queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
            setenv("NOTIFICATION_TOPIC_ARN", topic_arn)
            workflow = Workflow(dispatch, queue_url, sqs, clients["stepfunctions"])
            try:
                yield workflow
            finally:
                workflow.close()


#: The harness's own clients (S3, SNS, SQS, Step Functions), made once per test process: each test made four, about
#: a tenth of a workflow test's CPU time. Made inside moto's mock but before a test's dispatch is installed, they carry
#: botocore's and moto's handlers and nothing of a test (moto resets its backends, not clients, per test); the fake
#: credentials and the region are the same in every test.
_HARNESS_CLIENTS: dict[str, Any] = {}


def _harness_clients() -> dict[str, Any]:
    if not _HARNESS_CLIENTS:
        for service in ("s3", "sns", "sqs", "stepfunctions"):
            _HARNESS_CLIENTS[service] = boto3.client(service, region_name=REGION)
    return _HARNESS_CLIENTS


# --------------------------------------------------------------------------- who is calling

_caller = threading.local()


@contextlib.contextmanager
def acting_as(actor: str | None) -> Iterator[None]:
    """AWS calls made inside are ``actor``'s (a handler's name), or (None) the harness's own: the fault harness
    (fault_harness.py) injects faults only into the handlers' calls and the state machine's Lambda invokes."""
    previous = getattr(_caller, "actor", None)
    _caller.actor = actor
    try:
        yield
    finally:
        _caller.actor = previous


def current_actor() -> str | None:
    return getattr(_caller, "actor", None)


# --------------------------------------------------------------------------- a scripted SageMaker


@dataclasses.dataclass(frozen=True)
class RuleScript:
    """The rule-status.json a job writes: ``fired`` found an issue at ``step``, or (None) every rule ended clean;
    ``in_progress`` and ``errors`` name rules still evaluating or in Error at that tick, ``rules`` the rules the
    document lists (default: the job's selected rules), ``job_name`` the job it names (default: its own)."""

    fired: str | None
    step: int = 0
    initial_gradient_norm: float = 512.0
    in_progress: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    rules: tuple[str, ...] | None = None
    job_name: str | None = None


@dataclasses.dataclass
class Tick:
    """What DescribeTrainingJob answers at one poll; ``rule_status`` is written to S3 first (as the job would)."""

    status: str = "InProgress"
    secondary: str = "Training"
    failure_reason: str = ""
    rule_status: RuleScript | str | None = None
    #: FinalMetricDataList of a completed job (what SageMaker's MetricDefinitions regexes read from the log).
    final_metrics: dict[str, float] = dataclasses.field(default_factory=lambda: {"test:accuracy": 0.97})
    #: Seconds of training between the start of the wait and this tick (its state change event, if final).
    after_seconds: float = 0.0
    #: Legacy mode: SageMaker's DebugRuleEvaluationStatuses at this tick, by rule configuration name; a list of
    #: them: one per DescribeTrainingJob (the last repeats), as SageMaker's evaluators go on after the job.
    legacy_rules: dict[str, str] | list[dict[str, str]] | None = None


def running(**kwargs: Any) -> Tick:
    return Tick(**kwargs)


def issues_found(job_rule: str = "ExplodingTensor", step: int = 2, initial_gradient_norm: float = 512.0) -> Tick:
    return Tick(rule_status=RuleScript(job_rule, step, initial_gradient_norm))


def completed(
    after_seconds: float = 0.0,
    in_progress: tuple[str, ...] = (),
    errors: tuple[str, ...] = (),
    rules: tuple[str, ...] | None = None,
    legacy: dict[str, str] | list[dict[str, str]] | None = None,
    **final_metrics: float,
) -> Tick:
    """A completed job; its final metrics (default test:accuracy 0.97) as keyword arguments (``test_accuracy=``
    for test:accuracy). Its rules ended clean unless ``in_progress`` or ``errors`` name some; ``legacy`` is
    SageMaker's DebugRuleEvaluationStatuses (legacy mode) by rule name."""
    metrics = {name.replace("_", ":", 1): value for name, value in final_metrics.items()} or {"test:accuracy": 0.97}
    return Tick(
        status="Completed",
        secondary="Completed",
        rule_status=RuleScript(fired=None, in_progress=in_progress, errors=errors, rules=rules),
        final_metrics=metrics,
        after_seconds=after_seconds,
        legacy_rules=legacy,
    )


def failed(reason: str, after_seconds: float = 0.0) -> Tick:
    return Tick(status="Failed", secondary="Failed", failure_reason=reason, after_seconds=after_seconds)


def stopped(secondary: str = "Stopped") -> Tick:
    """Stopped: by someone else (secondary Stopped), or by SageMaker at MaxRuntimeExceeded / MaxWaitTimeExceeded."""
    return Tick(status="Stopped", secondary=secondary)


def rule_status_document(
    job_name: str, script: RuleScript, selected: tuple[str, ...] | None = None
) -> rule_status.RuleStatusDocument:
    now = datetime.datetime.now(datetime.UTC).isoformat()
    names = script.rules or selected or ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing")
    if script.fired is not None and script.fired not in names:
        names = (*names, script.fired)  # a rule the run selected besides the default three
    job_name = script.job_name or job_name
    if script.fired is None:
        rules = []
        for name in names:
            status = rule_status.NO_ISSUES_FOUND
            if name in script.in_progress:
                status = rule_status.IN_PROGRESS
            elif name in script.errors:
                status = rule_status.ERROR
            rules.append(rule_status.RuleStatus(name, status))
        return rule_status.RuleStatusDocument(
            job_name=job_name, updated_at=now, training_ended=not script.in_progress, last_step=40, rules=rules
        )
    fired, step, gradient_norm = script.fired, script.step, script.initial_gradient_norm
    rules = []
    for name in names:
        if name == fired:
            issue = rule_status.RuleIssue(step=step, tensor="gradient_norm", value=float("nan"), message=f"{name} fired")
            rules.append(rule_status.RuleStatus(name, rule_status.ISSUES_FOUND, issue=issue))
        else:
            rules.append(rule_status.RuleStatus(name, rule_status.IN_PROGRESS))
    evidence = rule_status.Evidence(
        initial_loss=30.0,
        initial_gradient_norm=gradient_norm,
        first_issue_step=step,
        phase="warmup",
        steps_per_epoch=20,
        last_step=step,
        last_finite_loss=31.0,
        max_gradient_norm=gradient_norm * 3,
        learning_rate_at_issue=0.1,
    )
    return rule_status.RuleStatusDocument(
        job_name=job_name, updated_at=now, last_step=step, rules=rules, evidence=evidence
    )


def _job_arn(region: str, name: str) -> str:
    return f"arn:aws:sagemaker:{region}:{ACCOUNT}:training-job/{name}"


class ScriptedSageMaker:
    """CreateTrainingJob / DescribeTrainingJob / StopTrainingJob / ListTags over per-job timelines (one per launch, in
    order).

    A job starts InProgress (Starting); each wait of the workflow for it moves it to the next tick of its timeline
    (:meth:`advance`; the last tick repeats), and DescribeTrainingJob answers the current tick. StopTrainingJob turns
    a running job into Stopping, then Stopped, one DescribeTrainingJob at a time.
    """

    STARTING = Tick(secondary="Starting")

    def __init__(self, timelines: list[list[Tick]]):
        self.timelines = timelines
        self.jobs: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.stopped: list[str] = []
        #: {(job, n): error}: the n-th DescribeTrainingJob of that job by the monitor or the cleanup answers the error
        #: (the job-events handler's own reads are not counted).
        self.describe_failures: dict[tuple[str, int], Exception] = {}
        #: Names another execution already holds: a create with one answers ResourceInUse, and the job found
        #: there runs with the other execution's tags.
        self.foreign_names: set[str] = set()
        #: Errors the next CreateTrainingJob calls answer with, one per call, before any job is made.
        self.create_failures: list[Exception] = []
        #: Called with each new job's name as it is created (to script failures for that name).
        self.launch_listeners: list[Any] = []
        #: The timeline of every job launched beyond the scripted ones (None: such a launch is a test failure).
        self.default_timeline: list[Tick] | None = None
        #: Jobs stopped while their execution was RUNNING (``execution_running`` says; the workflow sets it).
        self.stopped_while_running: list[str] = []
        self.execution_running: Callable[[], bool] = lambda: True
        #: Jobs created once their execution had ended (a launch under way when it was stopped).
        self.created_after_end: list[str] = []
        self._lock = threading.Lock()
        #: Set while the job-events handler runs on this thread: its reads are not the monitor's polls.
        self.quiet = threading.local()

    def register(self, dispatch: LocalDispatch) -> None:
        dispatch.register("sagemaker", "CreateTrainingJob", self.create_training_job)
        dispatch.register("sagemaker", "DescribeTrainingJob", self.describe_training_job)
        dispatch.register("sagemaker", "StopTrainingJob", self.stop_training_job)
        dispatch.register("sagemaker", "ListTags", self.list_tags)
        dispatch.register("sagemaker", "ListTrainingJobs", self.list_training_jobs)

    def take_every_name(self) -> None:
        """Every name this execution tries is already another execution's (a reused execution name)."""
        self.foreign_names.add("*")

    def create_training_job(self, call: OperationCall) -> dict[str, Any]:
        name = call.params["TrainingJobName"]
        for tag in call.params.get("Tags", []):  # SageMaker checks the pattern botocore's validation leaves out
            try:
                aws_tags.check_tag_value(tag["Value"])
            except ValueError as error:
                raise ServiceError("ValidationException", f"1 validation error detected: Value at 'tags' {error}") from None
        with self._lock:
            if self.create_failures:
                raise self.create_failures.pop(0)
            if ("*" in self.foreign_names or name in self.foreign_names) and name not in self.jobs:
                foreign_tags = [{"Key": "remediation:execution", "Value": "arn:aws:states:::execution:other:run"}]
                self.jobs[name] = {
                    "request": {**call.params, "Tags": foreign_tags},
                    "timeline": [Tick()],
                    "current": Tick(),
                    "polls": 0,
                    "stop": None,
                    "foreign": True,
                }
            if name in self.jobs:
                raise ServiceError(
                    "ResourceInUse",
                    f"Training job names must be unique within an AWS account and region, and a training job with this name already exists ({name})",
                )
            index = len(self.created)
            if index >= len(self.timelines) and self.default_timeline is None:
                raise AssertionError(
                    f"the test scripted {len(self.timelines)} jobs but job {index + 1} ({name}) was launched"
                )
            self.created.append(call.params)
            self.jobs[name] = {
                "request": call.params,
                "timeline": list(self.timelines[index] if index < len(self.timelines) else self.default_timeline),
                "current": self.STARTING,
                "polls": 0,
                "stop": None,
            }
        with acting_as(None):
            if not self.execution_running():
                self.created_after_end.append(name)
        for listener in self.launch_listeners:
            listener(name)
        return {"TrainingJobArn": _job_arn(call.region, name)}

    def advance(self, name: str) -> Tick:
        """Training time passes for the job: it moves to its next tick (the last one repeats) at once."""
        tick = self.next_tick(name)
        if tick is not None:
            self.reach(name, tick)
        return self.jobs[name]["current"]

    def next_tick(self, name: str) -> Tick | None:
        """The tick the job trains towards (None while it still trains towards the previous one)."""
        with self._lock:
            job = self._job(name)
            if job["stop"] is not None or job.get("pending") is not None:
                return None
            timeline = job["timeline"]
            job["pending"] = timeline.pop(0) if len(timeline) > 1 else timeline[0]
            return job["pending"]

    def reach(self, name: str, tick: Tick) -> None:
        with self._lock:
            job = self._job(name)
            job["pending"] = None
            if job["stop"] is None:
                job["current"] = tick

    def describe_training_job(self, call: OperationCall) -> dict[str, Any]:
        name = call.params["TrainingJobName"]
        with self._lock:
            job = self._job(name)
            if not getattr(self.quiet, "active", False):
                job["polls"] += 1
                if job["stop"] is None and job["current"].legacy_rules is not None:
                    job["legacy_reads"] = job.get("legacy_reads", 0) + 1
                failure = self.describe_failures.get((name, job["polls"]))
                if failure is not None:
                    raise failure
            if job["stop"] is not None:
                job["stop"] += 1
                tick = (
                    Tick(status="Stopping", secondary="Stopping")
                    if job["stop"] == 1
                    else Tick(status="Stopped", secondary="Stopped")
                )
            else:
                tick = job["current"]
        return self.describe_response(call.region, name, tick)

    def describe_response(self, region: str, name: str, tick: Tick) -> dict[str, Any]:
        """DescribeTrainingJob's answer for the job at ``tick`` (its rule status written to S3 first, as the job
        would have written it)."""
        request = self.jobs[name]["request"]
        if tick.rule_status is not None:
            body = (
                tick.rule_status
                if isinstance(tick.rule_status, str)
                else rule_status_document(
                    name, tick.rule_status, tuple(rule["name"] for rule in self.selected_rules(name))
                ).to_json()
            )
            bucket, key = self.rule_status_location(name)
            with acting_as(None):  # the job's own write, not a handler's call
                self._s3().put_object(Bucket=bucket, Key=key, Body=body.encode())
        response = {
            "TrainingJobName": name,
            "TrainingJobArn": _job_arn(region, name),
            "TrainingJobStatus": tick.status,
            "SecondaryStatus": tick.secondary,
            "AlgorithmSpecification": request["AlgorithmSpecification"],
            "HyperParameters": request["HyperParameters"],
            "RoleArn": request["RoleArn"],
            "ResourceConfig": request["ResourceConfig"],
            "StoppingCondition": request["StoppingCondition"],
            "CreationTime": datetime.datetime.now(datetime.UTC),
            "ModelArtifacts": {
                "S3ModelArtifacts": f"{request['OutputDataConfig']['S3OutputPath']}{name}/output/model.tar.gz"
            },
        }
        if tick.failure_reason:
            response["FailureReason"] = tick.failure_reason
        if tick.legacy_rules:
            legacy = tick.legacy_rules
            if isinstance(legacy, list):  # by the monitor's reads of this tick (the wait's own are not counted)
                seen = self.jobs[name].get("legacy_reads", 1)
                legacy = legacy[min(seen - 1, len(legacy) - 1)]
            response["DebugRuleEvaluationStatuses"] = [
                {"RuleConfigurationName": rule, "RuleEvaluationStatus": status} for rule, status in legacy.items()
            ]
        if tick.status == "Completed":
            response["FinalMetricDataList"] = [
                {"MetricName": name, "Value": value, "Timestamp": datetime.datetime.now(datetime.UTC)}
                for name, value in tick.final_metrics.items()
            ]
        return response

    def _s3(self) -> Any:
        """The job's S3 client: the harness's own (a client costs milliseconds of CPU to make), which carries no
        test's dispatch or interceptors: a job's writes are not a handler's calls."""
        return _harness_clients()["s3"]

    def stop_training_job(self, call: OperationCall) -> dict[str, Any]:
        name = call.params["TrainingJobName"]
        with self._lock:
            job = self._job(name)
            if job["stop"] is not None or job["current"].status != "InProgress":
                raise ServiceError("ValidationException", f"The training job {name} is not in a stoppable state")
            job["stop"] = 0
            self.stopped.append(name)
        with acting_as(None):
            if self.execution_running():
                self.stopped_while_running.append(name)
        return {}

    def rule_status_location(self, name: str) -> tuple[str, str]:
        """(bucket, key) of the job's rule-status.json: where its debugger writes it, under its hook configuration's
        S3OutputPath (as the debugger's S3 mirror does)."""
        hyperparameters = self.jobs[name]["request"]["HyperParameters"]
        hook = json.loads(job_contract.decode_hyperparameter(hyperparameters[job_contract.HOOK_CONFIG_HYPERPARAMETER]))
        bucket, prefix = bucket_layout.split_s3_uri(hook["S3OutputPath"])
        return bucket, f"{prefix}{rule_status.RULE_STATUS_FILE}"

    def checkpoint_prefix(self, name: str) -> str:
        """The job's checkpoint prefix: its request's CheckpointConfig.S3Uri (where SageMaker uploads them)."""
        return bucket_layout.split_s3_uri(self.jobs[name]["request"]["CheckpointConfig"]["S3Uri"])[1]

    def selected_rules(self, name: str) -> list[dict[str, Any]]:
        """The rules the job's request selected (the launcher's rule configuration hyperparameter)."""
        hyperparameters = self.jobs[name]["request"]["HyperParameters"]
        decoded = {key: json.loads(value) for key, value in hyperparameters.items()}
        text = job_contract.join_long_value(job_contract.RULE_CONFIGS_HYPERPARAMETER, decoded)
        if text is None:
            return [{"name": rule["name"]} for rule in rule_selection.watching_rules(None, "pytorch")]
        return [{"name": config["RuleConfigurationName"]} for config in json.loads(text)]

    def final_statuses(self) -> dict[str, str]:
        """Each of our jobs' status now (a stopped one counts as Stopped: SageMaker ends it)."""
        with self._lock:
            return {
                name: ("Stopped" if job["stop"] is not None else job["current"].status)
                for name, job in self.jobs.items()
                if not job.get("foreign")
            }

    def list_training_jobs(self, call: OperationCall) -> dict[str, Any]:
        """Every job (foreign ones too) whose name contains NameContains and whose status is StatusEquals, one page
        of MaxResults at a time (NextToken: the index to go on from). A stopped job reads Stopping once, then
        Stopped, as DescribeTrainingJob reads it."""
        contains, wanted = call.params.get("NameContains", ""), call.params.get("StatusEquals")
        start, size = int(call.params.get("NextToken") or 0), call.params.get("MaxResults", 10)
        with self._lock:
            summaries = []
            for name, job in self.jobs.items():
                if contains not in name:
                    continue
                if job["stop"] is not None:
                    job["stop"] += 1
                    status = "Stopping" if job["stop"] == 1 else "Stopped"
                else:
                    status = job["current"].status
                if wanted is None or status == wanted:
                    summaries.append(
                        {
                            "TrainingJobName": name,
                            "TrainingJobArn": _job_arn(call.region, name),
                            "TrainingJobStatus": status,
                            "CreationTime": datetime.datetime.now(datetime.UTC),
                        }
                    )
        page = summaries[start : start + size]
        more = start + size < len(summaries)
        return {"TrainingJobSummaries": page, **({"NextToken": str(start + size)} if more else {})}

    def list_tags(self, call: OperationCall) -> dict[str, Any]:
        name = call.params["ResourceArn"].rsplit("/", 1)[1]
        with self._lock:
            return {"Tags": list(self._job(name)["request"].get("Tags", []))}

    def _job(self, name: str) -> dict[str, Any]:
        job = self.jobs.get(name)
        if job is None:
            raise ServiceError("ValidationException", f"Requested resource not found: {name}")
        return job

    def hyperparameter(self, index: int, name: str) -> Any:
        return json.loads(self.created[index]["HyperParameters"][name])


# --------------------------------------------------------------------------- the workflow around it


@dataclasses.dataclass
class Execution:
    status: str
    output: dict[str, Any] | None
    error: str | None
    cause: str | None
    notifications: list[dict[str, Any]]

    @property
    def event_types(self) -> list[str]:
        return [message["event_type"] for message in self.notifications]


@dataclasses.dataclass
class Training:
    """A scripted job on its way to its next tick: the seconds of training left, and the real timer that reaches
    it (None while a fallback holds it: :meth:`Workflow.quiet`)."""

    tick: Tick
    seconds_left: float
    timer: threading.Timer | None = None

    def hold(self, seconds_left: float) -> None:
        """Stop the real timer; the job has ``seconds_left`` of training left when it next trains."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.seconds_left = seconds_left


class Workflow:
    def __init__(
        self, dispatch: LocalDispatch, queue_url: str, sqs: Any, sfn: Any, definition_changes: dict[str, Any] | None = None
    ):
        self.dispatch = dispatch
        self.queue_url = queue_url
        self.sfn = sfn
        self.sqs = sqs
        self.state_machine_arn = self.create_state_machine("remediation", definition_changes)
        self.sagemaker: ScriptedSageMaker | None = None
        self.execution_arn: str | None = None
        self._count = 0
        # What plays EventBridge: the stack's rule for our jobs' state changes, to the real job-events handler.
        self.events = LocalEventBus(region=REGION, account=ACCOUNT)
        self.events.add_rule(
            "JobStateChange", job_events.training_job_state_change_pattern(JOB_NAME_PREFIX), self._job_events_quietly
        )
        dispatch.register_lambda_function(
            FUNCTION_ARNS["JobEventsFunctionArn"], self._wait_for_job, time_budgets.JOB_EVENTS_TIMEOUT_SECONDS
        )
        self.cleanups: list[dict[str, Any]] = []
        #: The timeouts (seconds) the execution's waits for a token asked, in order (the workflow fixture's record).
        self.callback_timeouts_asked: list[float] = []
        #: What tells :meth:`wait` that an execution ended (tests/execution_ends.py; the workflow fixture's).
        self.executions_ended: Ended | None = None
        #: What else may complete a wait's token (a fault harness's held-back event): each says True while under way.
        self.under_way: list[Callable[[], bool]] = []
        self._lock = threading.Lock()
        self._awaiting_end = 0  # test threads inside wait(): the test does nothing but wait for the execution
        self._ticks_under_way = 0  # ticks scripted jobs train towards, from the hand-out until reached
        #: The ticks jobs train towards, by job (see :class:`Training`).
        self._training: dict[str, Training] = {}

    def quiet(self, timeout_seconds: float) -> bool:
        """Nothing can complete a waiting task's token within its ``timeout_seconds``: the test waits for the
        execution to end, no scripted job is on its way to its next tick, the event bus has no event delayed, queued
        or in delivery, and nothing in ``under_way`` runs. Then a callback task's wait ends by its timeout at once
        (tests/interpreter_clock.py).

        A job that trains towards its next tick passes its training time as the fallback's: the tick due first
        wins, counted in seconds of training, not in the machine's. Due before the timeout, the job reaches it at
        once (its event then ends the wait); due at or after it, the wait times out at once and every job has
        trained ``timeout_seconds`` more, held there (no real timer) until its next wait hands out a token. So a
        job due 1.5 s into a 1 s fallback is polled once by the fallback and ends during the next wait, however
        slow the machine."""
        if not self._awaiting_end or not self.events.idle() or any(check() for check in self.under_way):
            return False
        with self._lock:
            if not self._training:
                return not self._ticks_under_way
            name, first = min(self._training.items(), key=lambda item: item[1].seconds_left)
            if first.seconds_left >= timeout_seconds:
                for training in self._training.values():
                    training.hold(training.seconds_left - timeout_seconds)
                return True
            del self._training[name]
            first.hold(0.0)
        threading.Thread(target=self._reach, args=(name, first.tick), daemon=True).start()
        return False

    def add_execution_cleanup_rule(self, state_machine_arn: str, wrapper: Callable[[Any], Any] | None = None) -> None:
        """The stack's rule on the state machine's executions ending TIMED_OUT, ABORTED or FAILED, to the real
        execution-cleanup handler (``wrapper(handler)`` in its place, when given)."""
        from lambdas import execution_cleanup_handler

        def cleanup(event: dict[str, Any], context: Any) -> Any:
            return execution_cleanup_handler.handler(event, context)  # looked up at each call (tests patch it)

        self.events.add_rule(
            f"ExecutionEnded-{state_machine_arn.rsplit(':', 1)[1]}",
            job_events.execution_status_change_pattern(state_machine_arn),
            wrapper(cleanup) if wrapper else cleanup,
        )

    def execution_ended(self, arn: str) -> dict[str, Any]:
        """Step Functions sends the ended execution's status change; returns what the cleanup did (or {})."""
        before = len(self.events.deliveries)
        self.events.put(execution_status_change_event(self.sfn.describe_execution(executionArn=arn), REGION, ACCOUNT))
        self.events.drain()
        delivered = self.events.deliveries[before:]
        assert all(delivery.error is None for delivery in delivered), [delivery.error for delivery in delivered]
        return delivered[-1].result if delivered else {}

    def create_state_machine(self, name: str, changes: dict[str, Any] | None = None) -> str:
        """The ASL with the test's substitutions (and top-level ``changes``, e.g. a shorter TimeoutSeconds)."""
        definition = ASL_PATH.read_text()
        for key, value in FUNCTION_ARNS.items():
            definition = definition.replace("${" + key + "}", value)
        assert "${" not in definition, "a definition substitution was left unresolved"
        definition = json.dumps({**json.loads(definition), **(changes or {})})
        return self.sfn.create_state_machine(
            name=name, definition=definition, roleArn=f"arn:aws:iam::{ACCOUNT}:role/StatesExecutionRole"
        )["stateMachineArn"]

    def close(self) -> None:
        self.events.close()

    def script(self, *timelines: list[Tick]) -> ScriptedSageMaker:
        self.sagemaker = ScriptedSageMaker(list(timelines))
        self.sagemaker.register(self.dispatch)
        self.sagemaker.execution_running = self._execution_running
        return self.sagemaker

    def _execution_running(self) -> bool:
        if self.execution_arn is None:
            return False
        return self.sfn.describe_execution(executionArn=self.execution_arn)["status"] == "RUNNING"

    def on_launch(self, listener) -> None:
        """Call ``listener(job name)`` as each job is created (the scripted SageMaker must exist)."""
        self.sagemaker.launch_listeners.append(listener)

    # ------------------------------------------------------------------ the job-events Lambda and its events

    def _job_events_quietly(self, event: dict[str, Any], context: Any) -> Any:
        from lambdas import job_events_handler

        self.sagemaker.quiet.active = True
        try:
            return job_events_handler.handler(event, context)
        finally:
            self.sagemaker.quiet.active = False

    def _wait_for_job(self, event: dict[str, Any], context: Any) -> Any:
        """The WaitForJob task: the real handler keeps the token; then the job trains on towards its next tick,
        which it reaches ``after_seconds`` later (the rest of them, if a fallback held it: :meth:`quiet`), sending
        its state change event if that tick is final."""
        answer = self._job_events_quietly(event, context)
        if self.sagemaker is not None and answer.get("waiting"):
            name = answer["job_name"]
            tick = self.sagemaker.next_tick(name)
            with self._lock:
                if tick is not None:
                    self._ticks_under_way += 1
                    self._training[name] = Training(tick, tick.after_seconds)
                training = self._training.get(name)
                if training is not None and training.timer is None:
                    training.timer = threading.Timer(training.seconds_left, self._reach_in_time, args=(name, training))
                    training.timer.daemon = True
                    training.timer.start()
        return answer

    def _reach_in_time(self, name: str, training: Training) -> None:
        """The training's real seconds have passed (unless :meth:`quiet` has made the job reach it already, or held
        it, replacing its timer)."""
        with self._lock:
            if self._training.get(name) is not training or training.timer is not threading.current_thread():
                return  # reached at once, or held: a later hand-out's timer reaches it
            del self._training[name]
        self._reach(name, training.tick)

    def _reach(self, name: str, tick: Tick) -> None:
        try:
            self.sagemaker.reach(name, tick)
            if tick.status in job_events.FINAL_TRAINING_JOB_STATUSES:
                described = self.sagemaker.describe_response(REGION, name, tick)
                self.events.put(training_job_state_change_event(described, REGION, ACCOUNT))
        finally:
            with self._lock:
                self._ticks_under_way -= 1

    # ------------------------------------------------------------------ executions

    def start(self, execution_input: Any, state_machine_arn: str | None = None, name: str | None = None) -> str:
        self._count += 1
        machine, name = state_machine_arn or self.state_machine_arn, name or f"run-{self._count}"
        # Known before StartExecution returns: the first Lambda may run (and a test's wrapper of it read this) before
        # the test's thread is back from the call, as it did once on a loaded machine.
        self.execution_arn = f"{machine.replace(':stateMachine:', ':execution:', 1)}:{name}"
        started = self.sfn.start_execution(stateMachineArn=machine, name=name, input=json.dumps(execution_input))
        assert started["executionArn"] == self.execution_arn, started["executionArn"]
        return self.execution_arn

    def stop(self, arn: str, **reason: str) -> None:
        """StopExecution: as in AWS the execution reads ABORTED at once and its wait for a token ends
        (local_runtime/interpreter_stop.py)."""
        self.sfn.stop_execution(executionArn=arn, **reason)

    def wait(self, arn: str, timeout: float = 300.0) -> dict[str, Any]:
        """Wait for the execution to end: meanwhile the test does nothing else, so a task waiting for its token
        with nothing under way to complete it times out at once (:meth:`quiet`). Woken when an execution ends
        (``executions_ended``, the workflow fixture's), else it looks again after a pause."""
        deadline = time.monotonic() + timeout
        pause = 0.02  # short executions end fast; each poll costs moto's interpreter CPU, so longer ones wait longer
        with self.only_waiting():
            while True:
                ended_before = self.executions_ended.count if self.executions_ended else 0
                described = self.sfn.describe_execution(executionArn=arn)
                if described["status"] != "RUNNING":
                    return described
                if time.monotonic() > deadline:
                    raise AssertionError(f"execution still running after {timeout} s")
                if self.executions_ended:
                    self.executions_ended.wait_after(ended_before, max(0.0, deadline - time.monotonic()))
                else:
                    time.sleep(pause)
                    pause = min(pause * 1.5, 0.25)

    @contextlib.contextmanager
    def only_waiting(self) -> Iterator[None]:
        """While open, the test only waits for the execution to end (in :meth:`wait`, or following it as
        ``remediate cloud status --watch`` does): nothing it does can complete a task's token (:meth:`quiet`)."""
        with self._lock:
            self._awaiting_end += 1
        try:
            yield
        finally:
            with self._lock:
                self._awaiting_end -= 1

    def history(self, arn: str | None = None) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for page in self.sfn.get_paginator("get_execution_history").paginate(executionArn=arn or self.execution_arn):
            events += page["events"]
        return events

    def run(self, execution_input: Any, timeout: float = 300.0, state_machine_arn: str | None = None) -> Execution:
        described = self.wait(self.start(execution_input, state_machine_arn), timeout)
        output = json.loads(described["output"]) if described.get("output") else None
        return Execution(
            status=described["status"],
            output=output,
            error=described.get("error"),
            cause=described.get("cause"),
            notifications=self.drain_notifications(),
        )

    def drain_notifications(self) -> list[dict[str, Any]]:
        messages = []
        while True:
            batch = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return messages
            for message in batch:
                envelope = json.loads(message["Body"])
                body = json.loads(envelope["Message"])
                assert envelope["MessageAttributes"]["event_type"]["Value"] == body["event_type"]
                body["subject"] = envelope["Subject"]
                messages.append(body)
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
