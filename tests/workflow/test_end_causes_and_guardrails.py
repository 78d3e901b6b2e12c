"""End causes named right, and the stack's guardrails (finding 4 of issue 23; the cloud side of issue 22's spot
handling): a job SageMaker stopped at its own limits is not 'stopped outside the workflow'; instance types,
counts and instance-hours are the stack's to allow; execution names SageMaker's tags refuse still launch; the
hyperparameter limit counts the launcher's own."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from workflow_harness import BASE_INPUT, BUCKET, REGION, completed, issues_found, running, stopped

from contracts.stack_guardrails import CostGuardrails

SPOT = {**BASE_INPUT, "use_spot_instances": True}


def checkpoints_written(workflow):
    """The launch listener by which a job writes a checkpoint under its own prefix (its first job only)."""

    def write(job_name: str) -> None:
        if job_name.endswith("-001"):
            s3 = boto3.client("s3", region_name=REGION)
            key = f"{workflow.sagemaker.checkpoint_prefix(job_name)}checkpoint.pt"
            s3.put_object(Bucket=BUCKET, Key=key, Body=b"weights")

    return write


def attempts(execution) -> list[dict]:
    return execution.output["state"]["attempts"] if execution.output else []


def test_a_job_stopped_at_its_max_runtime_continues_from_its_checkpoints_with_the_time_left(workflow):
    sagemaker = workflow.script([stopped("MaxRuntimeExceeded")], [completed()])
    workflow.on_launch(checkpoints_written(workflow))
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    first, second = attempts(execution)
    assert first["outcome"] == "max_runtime_exceeded" and "MaxRuntimeExceeded" in first["outcome_reason"]
    assert first["decision"]["remedy"] == "ResumeWithTimeLeft"
    assert (second["resumed_from"], second["resumed_checkpoint_files"]) == (first["job_name"], 1)
    assert sagemaker.created[1]["HyperParameters"] == sagemaker.created[0]["HyperParameters"] | {
        key: value for key, value in sagemaker.created[1]["HyperParameters"].items() if key.startswith("remediation_")
    }


def test_a_job_stopped_at_its_max_runtime_with_no_launch_left_ends_saying_so(workflow):
    workflow.script([stopped("MaxRuntimeExceeded")])
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 1})

    assert execution.status == "FAILED" and execution.error == "MaxRuntimeExceeded"
    assert "cannot be continued from its checkpoints" in execution.cause and "max_run_seconds" in execution.cause


def test_no_spot_capacity_in_time_relaunches_on_demand_when_the_run_spec_allows_it(workflow):
    sagemaker = workflow.script([stopped("MaxWaitTimeExceeded")], [completed()])
    workflow.on_launch(checkpoints_written(workflow))
    execution = workflow.run({**SPOT, "spot_fallback_on_demand": True})

    assert execution.status == "SUCCEEDED", execution.cause
    first, second = attempts(execution)
    assert first["outcome"] == "capacity_error" and "MaxWaitTimeExceeded" in first["outcome_reason"]
    assert [request["EnableManagedSpotTraining"] for request in sagemaker.created] == [True, False]
    assert "MaxWaitTimeInSeconds" not in sagemaker.created[1]["StoppingCondition"]
    assert first["decision"]["changes"] == {"use_spot_instances": {"before": True, "after": False}}
    assert second["resumed_from"] == first["job_name"]
    states = [e["stateEnteredEventDetails"]["name"] for e in workflow.history() if "stateEnteredEventDetails" in e]
    assert "WaitBeforeRelaunch" in states and "Plan" not in states


def test_no_spot_capacity_in_time_relaunches_on_spot_without_the_fallback(workflow):
    sagemaker = workflow.script([stopped("MaxWaitTimeExceeded")], [completed()])
    execution = workflow.run(SPOT)
    assert execution.status == "SUCCEEDED", execution.cause
    assert [request["EnableManagedSpotTraining"] for request in sagemaker.created] == [True, True]
    assert "spot_fallback_on_demand" in attempts(execution)[0]["outcome_reason"]


def test_a_job_stopped_by_someone_else_is_still_said_so(workflow):
    workflow.script([stopped()])
    execution = workflow.run(BASE_INPUT)
    assert execution.status == "FAILED" and execution.error == "TrainingJobStopped"
    assert "stopped outside the workflow" in execution.cause


# --------------------------------------------------------------------------- the stack's guardrails


@pytest.fixture
def guardrails(monkeypatch):
    """The stack's environment: the cost guardrails (1.5 instance-hours) and no legacy mode."""
    cost = CostGuardrails(allowed_instance_types=("ml.m5.xlarge", "ml.g5.xlarge"), max_instance_count=2, max_instance_hours=1.5)
    for name, value in {**cost.to_environment(), "LEGACY_SAGEMAKER_DEBUGGER": "disabled"}.items():
        monkeypatch.setenv(name, value)
    return cost


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("instance_type", "ml.p4d.24xlarge", "-c allowed_instance_types"),
        ("instance_count", 20, "-c max_instance_count"),
        ("legacy_sagemaker_debugger", True, "-c legacy_sagemaker_debugger=true"),
    ],
)
def test_what_the_stack_does_not_allow_is_refused_before_anything_runs(workflow, guardrails, field, value, said):
    sagemaker = workflow.script([completed()])
    execution = workflow.run({**BASE_INPUT, field: value})
    assert execution.status == "FAILED" and execution.error == "InvalidExecutionInput"
    assert field in execution.cause and said in execution.cause
    assert sagemaker.created == []


def test_the_instance_hours_guardrail_cuts_each_job_and_ends_the_run_when_spent(workflow, guardrails):
    """1.5 instance-hours over at most 2 instances a job: IAM lets a job run 2,700 s (it cannot see the instance
    count), so jobs of up to an hour get 2,700 s each; after two, the planner ends the run instead of planning a
    third."""
    sagemaker = workflow.script([issues_found("ExplodingTensor", step=2)], [issues_found("ExplodingTensor", step=5)], [completed()])
    execution = workflow.run({**BASE_INPUT, "max_run_seconds": 3600})

    runtimes = [request["StoppingCondition"]["MaxRuntimeInSeconds"] for request in sagemaker.created]
    assert runtimes == [guardrails.max_job_runtime_seconds] * 2 == [2700, 2700]
    assert execution.status == "FAILED" and execution.error == "InstanceHoursBudgetSpent"
    assert "1.50 of 1.50 instance-hours used" in execution.cause and "-c max_instance_hours" in execution.cause


def test_a_job_of_the_most_instances_spends_at_most_the_executions_instance_hours(workflow, guardrails):
    """Every instance counted: two instances get 2,700 s each (1.5 instance-hours together), and no second job."""
    sagemaker = workflow.script([issues_found("ExplodingTensor", step=2)], [completed()])
    execution = workflow.run(
        {**BASE_INPUT, "max_run_seconds": 3600, "instance_type": "ml.g5.xlarge", "instance_count": 2}
    )
    (request,) = sagemaker.created
    spent = request["ResourceConfig"]["InstanceCount"] * request["StoppingCondition"]["MaxRuntimeInSeconds"]
    assert spent == guardrails.max_instance_seconds == 5400
    assert execution.status == "FAILED" and execution.error == "InstanceHoursBudgetSpent"


def test_an_execution_started_while_the_stacks_most_run_is_refused_before_it_launches(workflow, guardrails):
    """max_concurrent_executions (2 here): a third execution started while two older ones run ends at Initialize,
    ConcurrentExecutionsLimit, naming the context key; once one has ended, the next one runs. No IAM condition key
    counts executions: it is the workflow's to check (it used to launch whatever was started, N x the instance-hours)."""
    sagemaker = workflow.script([running()], [running()], [completed()], [completed()])
    slow = {**BASE_INPUT, "monitor_interval_seconds": 60}
    first, second = workflow.start(slow), workflow.start(slow)
    wait_until(lambda: len(sagemaker.created) == 2)

    third = workflow.run(BASE_INPUT)
    assert third.status == "FAILED" and third.error == "ConcurrentExecutionsLimit"
    assert "max_concurrent_executions" in third.cause and "-c max_concurrent_executions" in third.cause
    assert len(sagemaker.created) == 2

    workflow.stop(first, error="UserStop", cause="making room")
    workflow.wait(first)
    fourth = workflow.run(BASE_INPUT)
    assert fourth.status == "SUCCEEDED", fourth.cause
    workflow.stop(second, error="UserStop", cause="done")


def wait_until(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


# --------------------------------------------------------------------------- names and limits


@pytest.mark.parametrize("name", ["run(1)!", "it's-mine", "ünïcode_run~x", "a" * 80])
def test_an_execution_name_sagemakers_tags_refuse_still_launches(workflow, name):
    """Step Functions allows these names; SageMaker's tag pattern does not (!, ', (, ), ~): the tag values are
    made valid, and the job is still recognised as this execution's."""
    sagemaker = workflow.script([completed()])
    arn = workflow.start(BASE_INPUT, name=name)
    described = workflow.wait(arn)
    assert described["status"] == "SUCCEEDED", described.get("cause")
    tags = {tag["Key"]: tag["Value"] for tag in sagemaker.created[0]["Tags"]}
    assert tags["remediation:execution"].endswith(name.replace("(", "_").replace(")", "_").replace("!", "_").replace("'", "_").replace("~", "_"))


def test_hyperparameters_and_the_launchers_own_are_counted_against_sagemakers_100(workflow):
    names = [
        "ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "WeightUpdateRatio", "PoorWeightInitialization",
        "DeadRelu", "SaturatedActivation", "AllZero", "UnchangedTensor", "TensorVariance", "ClassImbalance", "Overfit",
        "Overtraining", "StalledTrainingRule", "CheckInputImages",
    ]  # fmt: skip
    rules = [
        {"name": name, "parameters": {"start_step": "0", "end_step": "1000000", **({"max_threshold": "1e6"} if name == "TensorVariance" else {})}}
        for name in names
    ]
    sagemaker = workflow.script([completed()])
    execution = workflow.run(
        {
            **BASE_INPUT,
            "source_dir": f"s3://{BUCKET}/code/x.tar.gz",
            "entry_point": "train.py",
            "hyperparameters": {f"h{index}": index for index in range(90)},
            "rules": rules,
            "instance_type": "ml.g5.xlarge",
            "instance_count": 2,
            "distribution": {"torch_distributed": {"enabled": True}},
        }
    )
    assert execution.status == "FAILED" and execution.error == "InvalidExecutionInput"
    assert "hyperparameters" in execution.cause and "keep at most 89" in execution.cause
    assert sagemaker.created == []
    assert json.loads  # (the request would have had 101)


FIFTEEN_RULES = [
    "ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "WeightUpdateRatio", "PoorWeightInitialization",
    "DeadRelu", "SaturatedActivation", "AllZero", "UnchangedTensor", "TensorVariance", "ClassImbalance", "Overfit",
    "Overtraining", "StalledTrainingRule", "CheckInputImages",
]  # fmt: skip


def at_the_limit_input(entries: int) -> dict:
    """A script with ``entries`` hyperparameters of its own, 15 rules and a distribution."""
    return {
        **BASE_INPUT,
        "source_dir": f"s3://{BUCKET}/code/x.tar.gz",
        "entry_point": "train.py",
        "hyperparameters": {f"h{index}": index for index in range(entries)},
        "rules": [
            {"name": name, "parameters": {"max_threshold": "1e6"} if name == "TensorVariance" else {}}
            for name in FIFTEEN_RULES
        ],
        "instance_type": "ml.g5.xlarge",
        "instance_count": 2,
        "distribution": {"torch_distributed": {"enabled": True}},
        "remedies": {"ExplodingTensor": [{"hyperparameter": "h1", "multiply_by": 0.5}]},
        "objective": {"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9},
        "metric_definitions": [{"Name": "test:accuracy", "Regex": "acc=([0-9.]+)"}],
    }


@pytest.mark.parametrize("entries", [87, 88])
def test_a_planned_job_over_sagemakers_100_hyperparameters_ends_the_run_named_not_unnamed(workflow, monkeypatch, entries):
    """87 or 88 entries, 15 rules and a distribution fit at Initialize (counted with the longest job name); the in-job
    settings a plan may add (class weighting, the robust loss) take the next request past 100. Whatever the planner
    plans, the run ends with a named error whose cause gives the count and the fix, not the launch's unnamed
    JobRequestError (what it ended with before: is_named('JobRequestError') is false)."""
    from lambdas import plan_handler
    from lambdas.remediation.job import job_request
    from lambdas.remediation.state.end_causes import is_named

    planned = plan_handler.policies.plan

    def plan_with_in_job_settings(state):
        result = planned(state)
        if result.next_action != "launch_new":
            return result
        settings = {"debugger_class_weighting": "balanced", "debugger_robust_loss": "generalized_cross_entropy"}
        return result.updated(run_spec=result.run_spec.model_copy(update=settings))

    monkeypatch.setattr(plan_handler.policies, "plan", plan_with_in_job_settings)
    sagemaker = workflow.script([issues_found("ExplodingTensor", step=2)], [completed()])
    execution = workflow.run(at_the_limit_input(entries))

    first = sagemaker.created[0]["HyperParameters"]
    assert len(first) <= job_request.MAX_HYPERPARAMETERS
    assert execution.status == "SUCCEEDED" or is_named(execution.error), (execution.error, execution.cause)
    if len(first) + 2 > job_request.MAX_HYPERPARAMETERS:  # the second request could not be launched
        assert len(sagemaker.created) == 1 and execution.error == "TooManyHyperparameters"
        assert f"has {entries} entries" in execution.cause and "would carry 10" in execution.cause
        assert "keep at most" in execution.cause and "(or select fewer rules)" in execution.cause
    else:  # it fitted (the real job name is shorter than the longest the count assumes): launched, and ended named
        assert len(sagemaker.created) == 2 and len(sagemaker.created[1]["HyperParameters"]) == len(first) + 2
