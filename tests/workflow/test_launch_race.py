"""An execution stopped while its Train task runs leaves no job running (finding 1 of issue 23).

Step Functions does not stop a Lambda when its execution is stopped or times out. A train Lambda still copying
checkpoints or calling CreateTrainingJob goes on and creates its job; the execution-cleanup Lambda, which the
execution's end triggers, may have looked before the job existed and found nothing. The fault harness stops the
execution at that worst moment and lets the cleanup look first."""

from __future__ import annotations

import json

import boto3
from workflow_harness import BASE_INPUT, BUCKET, REGION, issues_found, running

OVERFIT_SCRIPT = {
    "source_dir": f"s3://{BUCKET}/code/my-script.tar.gz",
    "entry_point": "train.py",
    "hyperparameters": {"lr": 0.1, "weight_decay": 0.0001, "epochs": 10},
    "remedies": {"Overfit": [{"hyperparameter": "weight_decay", "multiply_by": 10, "max": 0.01, "resume": True}]},
}


def write_checkpoints(sagemaker, job_name: str) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    for epoch in (3, 4):
        key = f"{sagemaker.checkpoint_prefix(job_name)}checkpoint-epoch-{epoch:04d}.pt"
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"weights %d" % epoch)


def run_stopped_at(workflow, faults, moment: str) -> dict:
    sagemaker = workflow.script([issues_found("Overfit", step=40)], [running()])
    workflow.on_launch(lambda name: write_checkpoints(sagemaker, name) if name.endswith("-001") else None)
    faults.abort("train", moment, occurrence=2 if moment != "before" else 1)
    arn = workflow.start({**BASE_INPUT, **OVERFIT_SCRIPT})
    described = workflow.wait(arn)
    faults.settle(arn)
    return {"status": described["status"], "jobs": sagemaker.final_statuses(), "sagemaker": sagemaker}


def test_stopped_before_create_training_job_the_train_lambda_stops_the_job_it_then_creates(workflow, faults):
    ran = run_stopped_at(workflow, faults, "CreateTrainingJob")
    assert ran["status"] == "ABORTED"
    second = ran["sagemaker"].created[1]["TrainingJobName"]
    assert ran["jobs"] == {ran["sagemaker"].created[0]["TrainingJobName"]: "Stopped", second: "Stopped"}


def test_stopped_during_the_checkpoint_copy_leaves_no_job_running(workflow, faults):
    ran = run_stopped_at(workflow, faults, "CopyObject")
    assert ran["status"] == "ABORTED"
    assert "InProgress" not in ran["jobs"].values(), ran["jobs"]
    assert len(ran["jobs"]) == 2


def test_the_cleanups_second_look_stops_the_job_when_the_train_lambda_cannot_check(workflow, faults):
    """The train Lambda's DescribeExecution is throttled: it cannot know its execution ended. The cleanup, which
    found no job at its first look, looks again once the train Lambda's timeout has passed, and stops it."""
    faults.schedule.add("sfn", "DescribeExecution", "throttle", times=10)
    ran = run_stopped_at(workflow, faults, "CreateTrainingJob")
    second = ran["sagemaker"].created[1]["TrainingJobName"]
    assert ran["jobs"][second] == "Stopped"
    cleanup = [d for d in workflow.events.deliveries if d.rule.startswith("ExecutionEnded")][-1]
    assert cleanup.error is None and cleanup.result["stopped"] == [second]



def test_every_request_the_handlers_make_on_these_paths_passes_botocores_validation(workflow, faults):
    """The new requests (DescribeExecution and StopTrainingJob from the train Lambda, GetExecutionHistory newest
    first, the resume's CopyObject and ListObjectsV2) checked one by one against botocore's service models, besides
    the clients' own validation."""
    import botocore.session
    from botocore.validate import validate_parameters

    calls = []
    workflow.dispatch.add_interceptor(lambda call: calls.append(call) if call.service != "lambda" else None)
    run_stopped_at(workflow, faults, "CreateTrainingJob")
    session = botocore.session.get_session()
    names = {"sfn": "stepfunctions"}
    for call in calls:
        model = session.get_service_model(names.get(call.service, call.service)).operation_model(call.operation)
        validate_parameters(call.params, model.input_shape)
    seen = {(call.service, call.operation) for call in calls}
    assert {
        ("sfn", "DescribeExecution"),
        ("sfn", "GetExecutionHistory"),
        ("sagemaker", "StopTrainingJob"),
        ("s3", "CopyObject"),
        ("s3", "ListObjectsV2"),
    } <= seen
    (history,) = {json.dumps(call.params, sort_keys=True) for call in calls if call.operation == "GetExecutionHistory"}
    assert json.loads(history)["reverseOrder"] is True and json.loads(history)["maxResults"] == 25
