"""The workflow harness (fixture in conftest.py): moto's Step Functions interpreter runs statemachine/remediation.asl.json,
lambda.Invoke runs the real handlers in-process through local_runtime.botocore_dispatch, and a
scripted SageMaker (registered through the same seam) plays each job's timeline. S3, SNS and SQS
are moto's; notifications are read back from an SQS queue subscribed to the topic."""

from __future__ import annotations

import dataclasses
import datetime
import json
import pathlib
import threading
import time
from typing import Any

import boto3

from contracts import bucket_layout, rule_status
from local_runtime.botocore_dispatch import LocalDispatch, OperationCall, ServiceError

REGION = "us-east-1"
ACCOUNT = "123456789012"
BUCKET = "remediation-artifacts"
ASL_PATH = pathlib.Path(__file__).resolve().parents[2] / "statemachine" / "remediation.asl.json"
FUNCTION_ARNS = {
    "TrainFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:remediation-train",
    "MonitorFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:remediation-monitor",
    "PlanFunctionArn": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:remediation-plan",
}
BASE_INPUT = {
    "bucket": BUCKET,
    "region": REGION,
    "sm_role": f"arn:aws:iam::{ACCOUNT}:role/SageMakerExecutionRole",
    "monitor_interval_seconds": 0,
}


# --------------------------------------------------------------------------- a scripted SageMaker


@dataclasses.dataclass(frozen=True)
class RuleScript:
    """The rule-status.json a job writes: ``fired`` found an issue at ``step``, or (None) every rule ended clean."""

    fired: str | None
    step: int = 0
    initial_gradient_norm: float = 512.0


@dataclasses.dataclass
class Tick:
    """What DescribeTrainingJob answers at one poll; ``rule_status`` is written to S3 first (as the job would)."""

    status: str = "InProgress"
    secondary: str = "Training"
    failure_reason: str = ""
    rule_status: RuleScript | str | None = None
    #: FinalMetricDataList of a completed job (what SageMaker's MetricDefinitions regexes read from the log).
    final_metrics: dict[str, float] = dataclasses.field(default_factory=lambda: {"test:accuracy": 0.97})


def running(**kwargs: Any) -> Tick:
    return Tick(**kwargs)


def issues_found(job_rule: str = "ExplodingTensor", step: int = 2, initial_gradient_norm: float = 512.0) -> Tick:
    return Tick(rule_status=RuleScript(job_rule, step, initial_gradient_norm))


def completed(**final_metrics: float) -> Tick:
    """A clean, completed job; its final metrics (default test:accuracy 0.97) as keyword arguments (``test_accuracy=``
    for test:accuracy)."""
    metrics = {name.replace("_", ":", 1): value for name, value in final_metrics.items()} or {"test:accuracy": 0.97}
    return Tick(status="Completed", secondary="Completed", rule_status=RuleScript(fired=None), final_metrics=metrics)


def failed(reason: str) -> Tick:
    return Tick(status="Failed", secondary="Failed", failure_reason=reason)


def stopped() -> Tick:
    return Tick(status="Stopped", secondary="Stopped")


def rule_status_document(job_name: str, script: RuleScript) -> rule_status.RuleStatusDocument:
    now = datetime.datetime.now(datetime.UTC).isoformat()
    names = ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing")
    if script.fired is None:
        rules = [rule_status.RuleStatus(name, rule_status.NO_ISSUES_FOUND) for name in names]
        return rule_status.RuleStatusDocument(
            job_name=job_name, updated_at=now, training_ended=True, last_step=40, rules=rules
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
    """CreateTrainingJob / DescribeTrainingJob / StopTrainingJob over per-job timelines (one per launch, in order).

    Each DescribeTrainingJob of a job advances its timeline by one tick; the last
    tick repeats. StopTrainingJob turns a running job into Stopping, then Stopped.
    """

    def __init__(self, timelines: list[list[Tick]]):
        self.timelines = timelines
        self.jobs: dict[str, dict[str, Any]] = {}
        self.created: list[dict[str, Any]] = []
        self.stopped: list[str] = []
        self.describe_failures: dict[tuple[str, int], Exception] = {}
        #: Names another execution already holds: a create with one answers ResourceInUse, and the job found
        #: there runs with the other execution's tags.
        self.foreign_names: set[str] = set()
        #: Errors the next CreateTrainingJob calls answer with, one per call, before any job is made.
        self.create_failures: list[Exception] = []
        #: Called with each new job's name as it is created (to script failures for that name).
        self.launch_listeners: list[Any] = []
        self._lock = threading.Lock()

    def register(self, dispatch: LocalDispatch) -> None:
        dispatch.register("sagemaker", "CreateTrainingJob", self.create_training_job)
        dispatch.register("sagemaker", "DescribeTrainingJob", self.describe_training_job)
        dispatch.register("sagemaker", "StopTrainingJob", self.stop_training_job)
        dispatch.register("sagemaker", "ListTags", self.list_tags)

    def take_every_name(self) -> None:
        """Every name this execution tries is already another execution's (a reused execution name)."""
        self.foreign_names.add("*")

    def create_training_job(self, call: OperationCall) -> dict[str, Any]:
        name = call.params["TrainingJobName"]
        with self._lock:
            if self.create_failures:
                raise self.create_failures.pop(0)
            if ("*" in self.foreign_names or name in self.foreign_names) and name not in self.jobs:
                foreign_tags = [{"Key": "remediation:execution", "Value": "arn:aws:states:::execution:other:run"}]
                self.jobs[name] = {
                    "request": {**call.params, "Tags": foreign_tags},
                    "timeline": [Tick()],
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
            if index >= len(self.timelines):
                raise AssertionError(
                    f"the test scripted {len(self.timelines)} jobs but job {index + 1} ({name}) was launched"
                )
            self.created.append(call.params)
            self.jobs[name] = {
                "request": call.params,
                "timeline": list(self.timelines[index]),
                "polls": 0,
                "stop": None,
            }
        for listener in self.launch_listeners:
            listener(name)
        return {"TrainingJobArn": _job_arn(call.region, name)}

    def describe_training_job(self, call: OperationCall) -> dict[str, Any]:
        name = call.params["TrainingJobName"]
        with self._lock:
            job = self._job(name)
            job["polls"] += 1
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
                timeline = job["timeline"]
                tick = timeline.pop(0) if len(timeline) > 1 else timeline[0]
        request = job["request"]
        if tick.rule_status is not None:
            body = (
                tick.rule_status
                if isinstance(tick.rule_status, str)
                else rule_status_document(name, tick.rule_status).to_json()
            )
            bucket, _ = bucket_layout.split_s3_uri(request["OutputDataConfig"]["S3OutputPath"])
            boto3.client("s3", region_name=REGION).put_object(
                Bucket=bucket, Key=bucket_layout.rule_status_key(name), Body=body.encode()
            )
        response = {
            "TrainingJobName": name,
            "TrainingJobArn": _job_arn(call.region, name),
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
        if tick.status == "Completed":
            response["FinalMetricDataList"] = [
                {"MetricName": name, "Value": value, "Timestamp": datetime.datetime.now(datetime.UTC)}
                for name, value in tick.final_metrics.items()
            ]
        return response

    def stop_training_job(self, call: OperationCall) -> dict[str, Any]:
        name = call.params["TrainingJobName"]
        with self._lock:
            job = self._job(name)
            if job["stop"] is not None:
                raise ServiceError("ValidationException", f"The training job {name} is not in a stoppable state")
            job["stop"] = 0
            self.stopped.append(name)
        return {}

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


class Workflow:
    def __init__(self, dispatch: LocalDispatch, queue_url: str):
        self.dispatch = dispatch
        self.queue_url = queue_url
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.sqs = boto3.client("sqs", region_name=REGION)
        definition = ASL_PATH.read_text()
        for key, value in FUNCTION_ARNS.items():
            definition = definition.replace("${" + key + "}", value)
        assert "${" not in definition, "a definition substitution was left unresolved"
        self.state_machine_arn = self.sfn.create_state_machine(
            name="remediation", definition=definition, roleArn=f"arn:aws:iam::{ACCOUNT}:role/StatesExecutionRole"
        )["stateMachineArn"]
        self.sagemaker: ScriptedSageMaker | None = None
        self._count = 0

    def script(self, *timelines: list[Tick]) -> ScriptedSageMaker:
        self.sagemaker = ScriptedSageMaker(list(timelines))
        self.sagemaker.register(self.dispatch)
        return self.sagemaker

    def on_launch(self, listener) -> None:
        """Call ``listener(job name)`` as each job is created (the scripted SageMaker must exist)."""
        self.sagemaker.launch_listeners.append(listener)

    def run(self, execution_input: Any, timeout: float = 60.0) -> Execution:
        self._count += 1
        arn = self.sfn.start_execution(
            stateMachineArn=self.state_machine_arn, name=f"run-{self._count}", input=json.dumps(execution_input)
        )["executionArn"]
        deadline = time.monotonic() + timeout
        while True:
            described = self.sfn.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING":
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"execution still running after {timeout} s")
            time.sleep(0.05)
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
