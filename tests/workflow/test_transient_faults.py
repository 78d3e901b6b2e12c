"""No healthy job stopped by a transient fault (finding 3 of issue 23). Each test runs a whole execution of the real
state machine under a named fault schedule (fault_harness.py) and checks the product's promises after it."""

from __future__ import annotations

import json

import boto3
from fault_harness import check_invariants
from workflow_harness import BASE_INPUT, BUCKET, REGION, completed, failed, issues_found, running


def function_is(name: str):
    return lambda call: call.params["FunctionName"].endswith(f"function:remediation-{name}")


def run(workflow, faults, execution_input=BASE_INPUT, healthy: bool = True) -> dict:
    arn = workflow.start(execution_input)
    described = workflow.wait(arn, timeout=120)
    faults.settle(arn)
    jobs = {request["TrainingJobName"] for request in workflow.sagemaker.created}
    violations = check_invariants(workflow, faults, described, healthy_jobs=jobs if healthy else set())
    return {"described": described, "violations": violations}


def test_a_throttled_job_events_lambda_falls_back_to_the_monitor_and_never_stops_the_job(workflow, faults):
    """The wait's invoke throttled through its whole Retry (1 try and 10 retries): its Catch goes to the Monitor,
    which finds the job still running and waits; the healthy job is never stopped. (This test used to inject 7
    throttles against a Retry of 10: it never reached the Catch it is named for.)"""
    sagemaker = workflow.script([running(), completed()])
    faults.schedule.add("lambda", "Invoke", "throttle", times=11, when=function_is("job-events"))
    ran = run(workflow, faults)
    assert ran["described"]["status"] == "SUCCEEDED", ran["described"].get("cause")
    assert sagemaker.stopped == [] and ran["violations"] == []
    assert len(faults.injected) == 11
    history = workflow.history()
    (retrier,) = [
        r for r in wait_for_job_definition(workflow)["Retry"] if "Lambda.TooManyRequestsException" in r["ErrorEquals"]
    ]
    assert retrier["MaxAttempts"] == 10  # 11 tries: the 11th throttle has no retry left
    failed = [e for e in history if e["type"] == "TaskFailed" and e["taskFailedEventDetails"]["error"] == "Lambda.TooManyRequestsException"]
    assert len(failed) == retrier["MaxAttempts"] + 1
    # ... so the last one was caught: the next state entered is the Catch's Next, Monitor
    after = [e for e in history if e["id"] > failed[-1]["id"] and "stateEnteredEventDetails" in e]
    assert after[0]["stateEnteredEventDetails"]["name"] == "Monitor"


def wait_for_job_definition(workflow) -> dict:
    definition = json.loads(workflow.sfn.describe_state_machine(stateMachineArn=workflow.state_machine_arn)["definition"])
    return definition["States"]["WaitForJob"]


def test_a_lambda_that_timed_out_is_retried(workflow, faults):
    """Sandbox.Timedout (the Lambda ran past its timeout) and Lambda.ClientExecutionTimeoutException were in no
    Retry list: the monitor's timeout went to HandleFailure and stopped the job."""
    sagemaker = workflow.script([running(), completed()])
    faults.schedule.add("lambda", "Invoke", "lambda_timeout", times=2, when=function_is("monitor"))
    faults.schedule.add("lambda", "Invoke", "timeout", times=1, when=function_is("train"))
    ran = run(workflow, faults)
    assert ran["described"]["status"] == "SUCCEEDED", ran["described"].get("cause")
    assert sagemaker.stopped == [] and ran["violations"] == []


def test_a_train_lambda_whose_answer_was_lost_after_it_launched_adopts_its_job(workflow, faults):
    """The Lambda launched the job and then timed out: the retried task finds the job under its name (its tags
    prove it is this execution's) and launches no second one."""
    sagemaker = workflow.script([completed()])
    faults.schedule.add("lambda", "Invoke", "lambda_timeout_after", times=1, when=function_is("train"))
    ran = run(workflow, faults)
    assert ran["described"]["status"] == "SUCCEEDED", ran["described"].get("cause")
    assert len(sagemaker.created) == 1 and ran["violations"] == []


def test_a_throttled_stop_training_job_is_retried_not_a_failed_run(workflow, faults):
    sagemaker = workflow.script([running(), issues_found("ExplodingTensor", step=2)], [completed()])
    faults.schedule.add("sagemaker", "StopTrainingJob", "throttle", times=1)
    ran = run(workflow, faults, healthy=False)
    assert ran["described"]["status"] == "SUCCEEDED", ran["described"].get("cause")
    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]] and ran["violations"] == []


def test_an_account_quota_in_use_is_retried_after_a_delay(workflow, faults):
    """ResourceLimitExceeded at CreateTrainingJob (other jobs hold the account's instance quota) failed the run at
    once; the launch is now retried after minutes (TrainingCapacityUnavailable: 60 s, doubling, jittered)."""
    sagemaker = workflow.script([completed()])
    faults.schedule.add("sagemaker", "CreateTrainingJob", "quota", times=2)
    ran = run(workflow, faults)
    assert ran["described"]["status"] == "SUCCEEDED", ran["described"].get("cause")
    assert len(sagemaker.created) == 1 and ran["violations"] == []
    failures = [e["taskFailedEventDetails"]["error"] for e in workflow.history() if e["type"] == "TaskFailed"]
    assert failures == ["TrainingCapacityUnavailable", "TrainingCapacityUnavailable"]
    definition = json.loads(workflow.sfn.describe_state_machine(stateMachineArn=workflow.state_machine_arn)["definition"])
    (retrier,) = [r for r in definition["States"]["Train"]["Retry"] if r["ErrorEquals"] == ["TrainingCapacityUnavailable"]]
    assert retrier["IntervalSeconds"] >= 60 and retrier["BackoffRate"] > 1


def test_a_capacity_error_is_relaunched_after_a_delay_not_at_once(workflow, faults):
    sagemaker = workflow.script([failed("CapacityError: Unable to provision requested ML compute capacity.")], [completed()])
    ran = run(workflow, faults, {**BASE_INPUT, "capacity_wait_seconds": 1}, healthy=False)
    assert ran["described"]["status"] == "SUCCEEDED"
    entered = [e for e in workflow.history() if "stateEnteredEventDetails" in e]
    (waited,) = [e for e in entered if e["stateEnteredEventDetails"]["name"] == "WaitBeforeRelaunch"]
    assert json.loads(waited["stateEnteredEventDetails"]["input"])["state"]["capacity_wait_seconds"] == 1
    assert len(sagemaker.created) == 2


def test_checkpoints_that_cannot_be_carried_over_start_the_next_job_from_step_0(workflow, faults):
    """More files than a checkpoint directory keeps: the run used to fail (CheckpointCopyError); the next job now
    starts from step 0 and the attempt says why."""
    s3 = boto3.client("s3", region_name=REGION)
    sagemaker = workflow.script([issues_found("Overfit", step=40)], [completed()])

    def many_files(job_name: str) -> None:
        if job_name.endswith("-001"):
            for index in range(201):
                s3.put_object(Bucket=BUCKET, Key=f"{sagemaker.checkpoint_prefix(job_name)}shard-{index}", Body=b"x")

    workflow.on_launch(many_files)
    script = {
        "source_dir": f"s3://{BUCKET}/code/my-script.tar.gz",
        "entry_point": "train.py",
        "hyperparameters": {"lr": 0.1, "weight_decay": 0.0001},
        "remedies": {"Overfit": [{"hyperparameter": "weight_decay", "multiply_by": 10, "max": 0.01, "resume": True}]},
    }
    ran = run(workflow, faults, {**BASE_INPUT, **script}, healthy=False)
    assert ran["described"]["status"] == "SUCCEEDED", ran["described"].get("cause")
    second = json.loads(ran["described"]["output"])["state"]["attempts"][1]
    assert second["resumed_from"] is None and "more than 200 files" in second["resume_skipped"]
    assert "starts from step 0" in second["resume_skipped"]
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix=sagemaker.checkpoint_prefix(sagemaker.created[1]["TrainingJobName"]))
