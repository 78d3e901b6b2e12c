"""A local run whose job-events Lambda keeps the wait's token slower than the wait's fallback (the in-process Lambda,
milliseconds in AWS, on a loaded machine) times that wait out as AWS would, by the deadline counted from when the
task was scheduled, and nothing of it reaches a later wait (local_runtime/interpreter_timeouts.py). The state machine,
the handlers, the event bus and moto's interpreter are the local runtime's own; SageMaker is a scripted job the test
ends, so no training runs."""

from __future__ import annotations

import datetime as dt
import threading
import time

from local_runtime.botocore_dispatch import OperationCall, ServiceError
from local_runtime.offline_aws import ACCOUNT_ID
from local_runtime.runtime import HANDLERS, LocalRuntime, RuntimeOptions, local_execution_input

FALLBACK_SECONDS = 1  # the shortest TimeoutSeconds Step Functions takes
WAIT_EVENTS = ("TaskScheduled", "TaskStarted", "TaskSubmitted", "TaskSucceeded", "TaskFailed", "TaskTimedOut")


class ScriptedJob:
    """SageMaker's training API for one job that trains until the test ends it."""

    def __init__(self, region: str):
        self.region = region
        self.request: dict | None = None
        self.ended = threading.Event()

    def register(self, dispatch) -> None:
        dispatch.register("sagemaker", "CreateTrainingJob", self.create)
        dispatch.register("sagemaker", "DescribeTrainingJob", self.describe)
        dispatch.register("sagemaker", "ListTags", self.list_tags)

    def arn(self, name: str) -> str:
        return f"arn:aws:sagemaker:{self.region}:{ACCOUNT_ID}:training-job/{name}"

    def create(self, call: OperationCall) -> dict:
        self.request = call.params
        return {"TrainingJobArn": self.arn(call.params["TrainingJobName"])}

    def describe(self, call: OperationCall) -> dict:
        request, ended = self.request, self.ended.is_set()
        if request is None or request["TrainingJobName"] != call.params["TrainingJobName"]:
            raise ServiceError("ValidationException", f"Requested resource not found: {call.params['TrainingJobName']}")
        return {
            "TrainingJobName": request["TrainingJobName"],
            "TrainingJobArn": self.arn(request["TrainingJobName"]),
            "TrainingJobStatus": "Completed" if ended else "InProgress",
            "SecondaryStatus": "Completed" if ended else "Training",
            "AlgorithmSpecification": request["AlgorithmSpecification"],
            "RoleArn": request["RoleArn"],
            "ResourceConfig": request["ResourceConfig"],
            "StoppingCondition": request["StoppingCondition"],
            "HyperParameters": request.get("HyperParameters", {}),
            "CreationTime": dt.datetime.now(dt.UTC),
            "ModelArtifacts": {"S3ModelArtifacts": request["OutputDataConfig"]["S3OutputPath"] + "model.tar.gz"},
        }


    def list_tags(self, call: OperationCall) -> dict:
        return {"Tags": list(self.request.get("Tags", []))}


def waits_in(history: list[dict]) -> list[list[str]]:
    """The task events of each WaitForJob, in order (its entry to its exit)."""
    waits: list[list[str]] = []
    inside = False
    for event in history:
        if event["type"] == "TaskStateEntered":
            inside = event["stateEnteredEventDetails"]["name"] == "WaitForJob"
            if inside:
                waits.append([])
        elif event["type"] == "TaskStateExited":
            inside = False
        elif event["type"] in WAIT_EVENTS and "waitForTaskToken" in str(event):
            (waits[-1] if inside else waits.append(["outside a WaitForJob:"]) or waits[-1]).append(event["type"])
    return waits


def test_a_token_kept_slower_than_the_fallback_times_its_wait_out_and_leaves_the_next_wait_alone(tmp_path):
    with LocalRuntime(RuntimeOptions(run_dir=tmp_path / "run")) as runtime:
        job = ScriptedJob(runtime.options.region)
        job.register(runtime.dispatch)
        function = HANDLERS["JobEventsFunctionArn"][0]
        keep_token = runtime.dispatch.lambda_functions()[function]
        hand_outs: list[str] = []
        slow_hand_out_returned = threading.Event()

        def slow_then_keep(event, context):
            if event.get("action") == "wait_for_job":
                hand_outs.append(event["task_token"])
                if len(hand_outs) == 1:
                    # longer than the fallback: a real second, as moto's timer around the task is a real one
                    time.sleep(FALLBACK_SECONDS + 0.5)
                    try:
                        return keep_token(event, context)
                    finally:
                        slow_hand_out_returned.set()
                # the job ends before the second wait reads its status: the wait is answered at once
                job.ended.set()
            return keep_token(event, context)

        runtime.dispatch.register_lambda_function(function, slow_then_keep)
        runtime.start(local_execution_input(runtime.options, {"monitor_interval_seconds": FALLBACK_SECONDS}))
        while runtime.describe()["status"] == "RUNNING":
            time.sleep(0.05)
        # (moto alone ended the execution before: it timed the wait out while the Lambda still ran)
        assert slow_hand_out_returned.wait(300), "the slow hand-out never returned"
        history = runtime.history()

    # each wait: scheduled, started, its token handed out once, then its end; the slow one ended by its fallback
    assert waits_in(history) == [
        ["TaskScheduled", "TaskStarted", "TaskSubmitted", "TaskTimedOut"],
        ["TaskScheduled", "TaskStarted", "TaskSubmitted", "TaskSucceeded"],
    ]
    assert len(hand_outs) == 2
    # each wait asked the fallback of its input (not the state's input read in its place)
    scheduled = [event["taskScheduledEventDetails"] for event in history if event["type"] == "TaskScheduled"]
    assert [d["timeoutInSeconds"] for d in scheduled if "waitForTaskToken" in d["resource"]] == [FALLBACK_SECONDS] * 2
