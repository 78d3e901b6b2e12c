"""Run the remediation workflow on one machine: the real ASL, the real handlers, real training.

Only adapters live here. moto plays S3, SNS, SQS and Step Functions (its ASL
interpreter executes ``statemachine/remediation.asl.json``); the dispatch seam
answers ``lambda.Invoke`` with the real handlers and SageMaker's training API
with :class:`LocalTrainingPlatform`; a :class:`LocalEventBus` plays EventBridge
with the stack's rules (a job's state change wakes the workflow's wait through
the job-events handler; an execution that ends badly reaches the
execution-cleanup handler, as in the cloud). Nothing of the workflow's own logic is
repeated: the runtime sets the stage, the caller uploads the training source
and data (``upload``), starts an execution with the same execution input the
cloud accepts, and reads what happens.

    with LocalRuntime(RuntimeOptions(run_dir=Path("runs/x"))) as runtime:
        runtime.upload(archive, "code/sourcedir.tar.gz")  # and the channels
        arn = runtime.start(local_execution_input(runtime.options, {"policy": "anchor"}))
        while runtime.describe()["status"] == "RUNNING": ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import importlib
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from lambdas.remediation import handler_support
from lambdas.remediation.job import job_events
from local_runtime.botocore_dispatch import LocalDispatch
from local_runtime.event_bus import LocalEventBus, training_job_state_change_event
from local_runtime.interpreter_stop import stops_as_in_aws
from local_runtime.interpreter_timeouts import callback_timeouts_as_in_aws
from local_runtime.offline_aws import ACCOUNT_ID, OFFLINE_AWS_ENVIRONMENT
from local_runtime.s3_reads import s3_reads_as_in_aws
from local_runtime.sagemaker_api import register_training_api
from local_runtime.shipped import ASL_PATH
from local_runtime.training_platform import DEFAULT_STOP_GRACE_SECONDS, LocalTrainingPlatform

HANDLERS = {
    "TrainFunctionArn": ("remediation-train", "lambdas.train_handler"),
    "MonitorFunctionArn": ("remediation-monitor", "lambdas.monitor_handler"),
    "PlanFunctionArn": ("remediation-plan", "lambdas.plan_handler"),
    "JobEventsFunctionArn": ("remediation-job-events", "lambdas.job_events_handler"),
}
TOPIC_NAME = "training-remediation-notifications"
QUEUE_NAME = "training-remediation-local-inbox"
STATE_MACHINE_NAME = "training-remediation-local"
LOCAL_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/local-sagemaker-execution"
STATES_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/local-states-execution"
JOB_NAME_PREFIX = "remediation"

#: What the local loop changes from the cloud defaults: the wait's fallback poll is 10 s instead of 10 minutes (a
#: job's state change wakes the workflow at once either way). Everything else (instance type included) stays as the
#: cloud has it, so the train Lambda builds the cloud's own request.
LOCAL_EXECUTION_DEFAULTS = {"monitor_interval_seconds": 10}


@dataclasses.dataclass
class RuntimeOptions:
    run_dir: Path
    region: str = "us-east-1"
    bucket: str = "remediation-local-artifacts"
    num_threads: int | None = None
    stop_grace_seconds: float = DEFAULT_STOP_GRACE_SECONDS


def local_execution_input(options: RuntimeOptions, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The local defaults (the runtime's bucket and region, a local role, 1 s polls) with ``overrides``."""
    return {
        "bucket": options.bucket,
        "region": options.region,
        "sm_role": LOCAL_ROLE_ARN,
        **LOCAL_EXECUTION_DEFAULTS,
        **(overrides or {}),
    }


class LocalRuntime:
    """Context manager: sets up the fake account on enter, stops everything on exit."""

    def __init__(self, options: RuntimeOptions):
        self.options = options
        self.run_dir = Path(options.run_dir).resolve()
        self.platform: LocalTrainingPlatform | None = None
        self.dispatch: LocalDispatch | None = None
        self.events: LocalEventBus | None = None
        self.execution_arn: str | None = None
        self.state_machine_arn: str | None = None
        self.topic_arn: str | None = None
        self.queue_url: str | None = None
        self.notifications: list[dict[str, Any]] = []
        self._mock = None
        self._moto_as_in_aws = contextlib.ExitStack()  # the patches that make moto behave as AWS does, while open
        self._saved_environment: dict[str, str | None] = {}
        self._lambda_log = None
        self._redirected_handlers: list[tuple[logging.StreamHandler, Any]] = []
        self._warnings_handler: logging.Handler | None = None
        self._saved_moto_logging: tuple[bool, logging.Handler] | None = None
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LocalRuntime:
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _open(self) -> None:
        options = self.options
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._set_environment({**OFFLINE_AWS_ENVIRONMENT, "AWS_DEFAULT_REGION": options.region, "AWS_REGION": options.region})
        # A stop (Ctrl-C, SIGTERM, close) can land while a state is being evaluated: moto alone then ends the
        # execution FAILED with a history it cannot serialize; with this it ends ABORTED at once, as in AWS.
        self._moto_as_in_aws.enter_context(stops_as_in_aws())
        # WaitForJob's fallback counts from when the task is scheduled and ends it by its own path, however long the
        # in-process job-events Lambda takes to keep the token (local_runtime/interpreter_timeouts.py).
        self._moto_as_in_aws.enter_context(callback_timeouts_as_in_aws())
        # The monitor reads what the job's output mirror may be replacing at that moment (local_runtime/s3_reads.py).
        self._moto_as_in_aws.enter_context(s3_reads_as_in_aws())
        mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True}})
        mock.start()
        # only a mock that finished starting is stopped at close: Ctrl-C can land inside start(), before it counts
        # itself started, and a stop then would raise moto's "Called stop() before start()" over the interrupt
        self._mock = mock

        s3 = self.client("s3")
        if options.region == "us-east-1":
            s3.create_bucket(Bucket=options.bucket)
        else:
            s3.create_bucket(Bucket=options.bucket, CreateBucketConfiguration={"LocationConstraint": options.region})

        sns, sqs = self.client("sns"), self.client("sqs")
        self.topic_arn = sns.create_topic(Name=TOPIC_NAME)["TopicArn"]
        self.queue_url = sqs.create_queue(QueueName=QUEUE_NAME)["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        sns.subscribe(
            TopicArn=self.topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "false"}
        )

        self._set_environment(
            {
                "NOTIFICATION_TOPIC_ARN": self.topic_arn,
                "JOB_NAME_PREFIX": JOB_NAME_PREFIX,
                "POWERTOOLS_SERVICE_NAME": "training-remediation",
                "POWERTOOLS_METRICS_NAMESPACE": "TrainingRemediation",
                "POWERTOOLS_TRACE_DISABLED": "true",
                # No CloudWatch locally: EMF lines would only be printed to the terminal.
                "POWERTOOLS_METRICS_DISABLED": "true",
                "POWERTOOLS_LOG_LEVEL": "INFO",
                "ARTIFACTS_BUCKET": options.bucket,
            }
        )

        self.events = LocalEventBus(region=options.region, account=ACCOUNT_ID)
        self.platform = LocalTrainingPlatform(
            self.run_dir,
            lambda: self.client("s3"),
            region=options.region,
            num_threads=options.num_threads,
            stop_grace_seconds=options.stop_grace_seconds,
            on_status_change=self._job_status_changed,
        )
        self.dispatch = LocalDispatch()
        register_training_api(self.dispatch, self.platform)
        substitutions = {}
        for substitution, (function_name, module_name) in HANDLERS.items():
            module = importlib.import_module(module_name)
            self.dispatch.register_lambda_function(function_name, module.handler)
            substitutions[substitution] = f"arn:aws:lambda:{options.region}:{ACCOUNT_ID}:function:{function_name}"
        job_events_handler = importlib.import_module(HANDLERS["JobEventsFunctionArn"][1]).handler
        self.events.add_rule(
            "JobStateChange", job_events.training_job_state_change_pattern(JOB_NAME_PREFIX), job_events_handler
        )
        substitutions["NotificationTopicArn"] = self.topic_arn
        self._route_handler_logs()
        self._route_interpreter_logs()
        self.dispatch.install()
        handler_support.forget_clients()  # the handlers' clients are this account's, made with the dispatch installed

        definition = substitute(ASL_PATH.read_text(), substitutions)
        self.state_machine_arn = self.client("stepfunctions").create_state_machine(
            name=STATE_MACHINE_NAME, definition=definition, roleArn=STATES_ROLE_ARN
        )["stateMachineArn"]
        cleanup = importlib.import_module("lambdas.execution_cleanup_handler")
        # A stopped execution ends at once, as in AWS, while a train Lambda may still be launching its job. The
        # cloud's cleanup looks again once that Lambda's timeout has passed; here it knows when the Lambda returned.
        self._saved_settle_launch = cleanup.settle_launch
        train_function = HANDLERS["TrainFunctionArn"][0]
        cleanup.settle_launch = lambda until: self.dispatch.wait_for_invocations(
            train_function, max(0.0, until - time.time())
        )
        self.events.add_rule(
            "ExecutionEnded", job_events.execution_status_change_pattern(self.state_machine_arn), cleanup.handler
        )

    def close(self) -> None:
        """Stop the execution and every training process, then take the fake account down."""
        try:
            if self.execution_arn and self._mock is not None:
                try:
                    if self.describe()["status"] == "RUNNING":
                        self.stop_execution("the local runtime is closing")
                except Exception:  # noqa: BLE001 - closing must go on
                    pass
        finally:
            if self.platform is not None:
                self.platform.shutdown()
            if self.events is not None:
                self.events.close()
            if getattr(self, "_saved_settle_launch", None) is not None:
                importlib.import_module("lambdas.execution_cleanup_handler").settle_launch = self._saved_settle_launch
                self._saved_settle_launch = None
            if self.dispatch is not None:
                self.dispatch.uninstall()
            for handler, stream in self._redirected_handlers:
                handler.setStream(stream)
            self._redirected_handlers = []
            self._restore_interpreter_logs()
            if self._warnings_handler is not None:
                logging.getLogger("py.warnings").removeHandler(self._warnings_handler)
                logging.getLogger("py.warnings").propagate = True
                logging.captureWarnings(False)
                self._warnings_handler = None
            if self._lambda_log is not None:
                self._lambda_log.close()
                self._lambda_log = None
            if self._mock is not None:
                self._mock.stop()
                self._mock = None
            handler_support.forget_clients()
            self._moto_as_in_aws.close()
            self._restore_environment()

    # ------------------------------------------------------------------ the execution

    def start(self, execution_input: Mapping[str, Any], name: str | None = None) -> str:
        name = name or f"local-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        self.execution_arn = self.client("stepfunctions").start_execution(
            stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(dict(execution_input))
        )["executionArn"]
        # Step Functions sends the execution's status change when it ends; the cleanup rule takes the bad ends.
        self.events.watch_execution(self.describe)
        return self.execution_arn

    def describe(self) -> dict[str, Any]:
        return self.client("stepfunctions").describe_execution(executionArn=self.execution_arn)

    def history(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        paginator = self.client("stepfunctions").get_paginator("get_execution_history")
        for page in paginator.paginate(executionArn=self.execution_arn):
            events += page["events"]
        return events

    def stop_execution(self, cause: str) -> None:
        """StopExecution: the execution is ABORTED at once (its wait for the job released), as in AWS."""
        self.client("stepfunctions").stop_execution(executionArn=self.execution_arn, error=STOP_ERROR, cause=cause)

    def drain_notifications(self) -> list[dict[str, Any]]:
        """Receive what arrived on the SNS subscription since the last call, in order."""
        sqs = self.client("sqs")
        arrived = []
        while True:
            messages = sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
                "Messages", []
            )
            if not messages:
                break
            for message in messages:
                envelope = json.loads(message["Body"])
                arrived.append(
                    {
                        "subject": envelope.get("Subject"),
                        "message": envelope.get("Message"),
                        "attributes": {k: v.get("Value") for k, v in envelope.get("MessageAttributes", {}).items()},
                        "timestamp": envelope.get("Timestamp"),
                        "message_id": envelope.get("MessageId"),
                    }
                )
            sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[{"Id": str(index), "ReceiptHandle": m["ReceiptHandle"]} for index, m in enumerate(messages)],
            )
        arrived.sort(key=lambda item: item["timestamp"] or "")
        self.notifications += arrived
        return arrived

    def _job_status_changed(self, described: dict[str, Any]) -> None:
        """SageMaker sends the job's state change to EventBridge; here the event bus delivers it by the same rules."""
        if self.events is not None:
            self.events.put(training_job_state_change_event(described, self.options.region, ACCOUNT_ID))

    # ------------------------------------------------------------------ helpers

    def client(self, service: str):
        with self._clients_lock:
            if service not in self._clients:
                self._clients[service] = boto3.session.Session().client(service, region_name=self.options.region)
            return self._clients[service]

    def upload(self, path: Path, key: str) -> None:
        """Put a local file into the artifacts bucket (the training source, a channel's data)."""
        self.client("s3").upload_file(str(path), self.options.bucket, key)

    def _route_handler_logs(self) -> None:
        """The handlers log (Powertools, JSON) to stdout; locally those lines go to the run directory.

        Python warnings the handlers raise (Powertools warns about empty metrics) go there too.
        """
        self._lambda_log = open(self.run_dir / "lambda.log", "a", encoding="utf-8")
        logging.captureWarnings(True)
        warnings_handler = logging.StreamHandler(self._lambda_log)
        logging.getLogger("py.warnings").addHandler(warnings_handler)
        logging.getLogger("py.warnings").propagate = False
        self._warnings_handler = warnings_handler
        loggers = [logging.getLogger()] + [
            logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger)
        ]
        redirected: set[int] = {id(warnings_handler)}  # a handler on several loggers is redirected (and restored) once
        for logger in loggers:
            for handler in logger.handlers:
                if id(handler) in redirected:
                    continue
                if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
                    redirected.add(id(handler))
                    self._redirected_handlers.append((handler, handler.setStream(self._lambda_log)))

    def _route_interpreter_logs(self) -> None:
        """moto's interpreter logs each failed state as a warning with a traceback; keep those in the run directory."""
        moto_logger = logging.getLogger("moto")
        handler = logging.FileHandler(self.run_dir / "interpreter.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self._saved_moto_logging = (moto_logger.propagate, handler)
        moto_logger.addHandler(handler)
        moto_logger.propagate = False

    def _restore_interpreter_logs(self) -> None:
        if self._saved_moto_logging is not None:
            propagate, handler = self._saved_moto_logging
            moto_logger = logging.getLogger("moto")
            moto_logger.removeHandler(handler)
            moto_logger.propagate = propagate
            handler.close()
            self._saved_moto_logging = None

    def _set_environment(self, values: Mapping[str, str]) -> None:
        for name, value in values.items():
            if name not in self._saved_environment:
                self._saved_environment[name] = os.environ.get(name)
            os.environ[name] = value

    def _restore_environment(self) -> None:
        for name, value in self._saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_environment = {}


#: The error a local stop gives StopExecution (the ExecutionAborted event's error).
STOP_ERROR = "LocalStop"


def substitute(definition: str, substitutions: Mapping[str, str]) -> str:
    """Apply Step Functions definition substitutions (``${Name}``); an unknown one is an error."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in substitutions:
            raise KeyError(f"{ASL_PATH.name}: no value for definition substitution ${{{name}}}")
        return substitutions[name]

    return re.sub(r"\$\{(\w+)\}", replace, definition)
