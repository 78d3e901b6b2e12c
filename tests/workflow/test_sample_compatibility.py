"""The AWS sample's own execution input ends in the sample's final state.

The sample (aws-samples/amazon-sagemaker-debugger-step-functions, the blog post "Automating complex deep
learning model training using Amazon SageMaker Debugger and AWS Step Functions") starts its workflow with
the input below (resnet-model.ipynb). Its train Lambda adds 1 to history.num_retraining at every launch;
its monitor adds 1 to num_monitor_transitions at every poll, ends the run once that exceeds
max_monitor_transitions, and launches no more once num_retraining >= max_num_retraining. With the
reference network (explodes without batch norm, trains with it) its fixed ladder halves the warmup rate
five times (0.1 -> 0.003125), then adds batch norm: 7 launches, num_retraining 7.
"""

from __future__ import annotations

from workflow_harness import ACCOUNT, BUCKET, REGION, completed, issues_found, running

#: The notebook's workflow.execute(inputs=...), as written there (bucket and region are the account's).
SAMPLE_EXECUTION_INPUT = {
    "init_warmup_learning_rate": 0.1,
    "num_epochs": 5,
    "learning_rate": 0.1,
    "add_batch_norm": 0,
    "bucket": BUCKET,
    "base_job_name": "complex-resnet-model",
    "instance_type": "ml.m5.xlarge",
    "region": REGION,
    "debugger_save_interval": 100,
    "max_num_retraining": 30,
    "max_monitor_transitions": 200,
}
#: What the sample's notebook put into the state itself rather than the input: its SageMaker role (from
#: the stack here) and its planner, the fixed ladder (here the "anchor" policy; the default is "evidence").
SAMPLE_WIRING = {"sm_role": f"arn:aws:iam::{ACCOUNT}:role/lambda-sagemaker-train", "policy": "anchor", "monitor_interval_seconds": 1}


def test_the_samples_execution_input_ends_in_the_samples_final_state(workflow):
    exploding = [[running(), issues_found("ExplodingTensor", step=2)] for _ in range(6)]
    sagemaker = workflow.script(*exploding, [running(), completed()])
    execution = workflow.run({**SAMPLE_EXECUTION_INPUT, **SAMPLE_WIRING})

    assert execution.status == "SUCCEEDED", execution.cause
    state = execution.output["state"]
    jobs = [request["TrainingJobName"] for request in sagemaker.created]
    assert len(jobs) == 7
    assert state["next_action"] == "end"
    assert state["job_status"] == "Completed"
    history = {key: value for key, value in state["history"].items() if key in _SAMPLE_HISTORY_KEYS}
    monitor_passes = len(
        [event for event in workflow.history() if event.get("stateEnteredEventDetails", {}).get("name") == "Monitor"]
    )
    assert history == {
        "num_warmup_adjustments": 5,
        "num_batch_layer_adjustments": 1,
        "num_retraining": 7,
        "latest_job_name": jobs[-1],
        "num_learning_rate_adjustments": 0,
        # the sample's monitor adds 1 at every poll: two per job (the wait's and the one its end brings), and one
        # more where the 1 s fallback poll fires before the job's state change (a loaded machine)
        "num_monitor_transitions": monitor_passes,
    }
    assert monitor_passes >= 14
    warmups = [float(sagemaker.hyperparameter(index, "warmup_learning_rate")) for index in range(7)]
    assert warmups == [0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125, 0.003125]
    # add_batch_norm: the sample's 0/1 flag, off until the ladder adds batch norm at the last launch
    assert [sagemaker.hyperparameter(index, "add_batch_norm") for index in range(7)] == ["false"] * 6 + ["true"]
    assert all(float(sagemaker.hyperparameter(index, "learning_rate")) == 0.1 for index in range(7))


def test_max_num_retraining_counts_every_launch_as_in_the_sample(workflow):
    sagemaker = workflow.script(*[[issues_found("ExplodingTensor", step=2)] for _ in range(4)])
    execution = workflow.run({**SAMPLE_EXECUTION_INPUT, **SAMPLE_WIRING, "max_num_retraining": 3})

    assert execution.status == "FAILED" and execution.error == "RemediationBudgetExhausted"
    assert len(sagemaker.created) == 3  # the sample launches no more once num_retraining (3) >= 3
    assert "(3 launches of max_num_retraining=3)" in execution.cause


def test_max_monitor_transitions_polls_are_allowed_and_the_next_one_ends_the_run(workflow):
    sagemaker = workflow.script([running()])
    execution = workflow.run({**SAMPLE_EXECUTION_INPUT, **SAMPLE_WIRING, "max_monitor_transitions": 3})

    assert execution.status == "FAILED" and execution.error == "MonitorLimitReached"
    # the sample's monitor: num_monitor_transitions += 1, then "> max_monitor_transitions" ends it: the 4th poll
    monitor_passes = [
        event for event in workflow.history() if event.get("stateEnteredEventDetails", {}).get("name") == "Monitor"
    ]
    assert len(monitor_passes) == 4
    assert "after 4 monitor transitions (max_monitor_transitions=3)" in execution.cause
    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]]


_SAMPLE_HISTORY_KEYS = (
    "num_warmup_adjustments",
    "num_batch_layer_adjustments",
    "num_retraining",
    "latest_job_name",
    "num_learning_rate_adjustments",
    "num_monitor_transitions",
)
