"""The planner at the run's own limits (``lambdas.remediation.planning.run_limits``): a job SageMaker stopped at its
MaxRuntimeInSeconds continues from its checkpoints with the same hyperparameters, or the run ends saying which limit
leaves no launch. Each decision's fields, and each reason whole."""

from __future__ import annotations

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import ended

STOPPED_AT_MAX_RUNTIME = (
    "Job remediation-resnet-1 reached its MaxRuntimeInSeconds (3600 s) and SageMaker stopped it (MaxRuntimeExceeded)."
)


def test_a_job_out_of_time_continues_from_its_checkpoints_with_the_same_hyperparameters(reference_state, record):
    planned = plan(record(reference_state, outcome="max_runtime_exceeded", outcome_reason=STOPPED_AT_MAX_RUNTIME))
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.next_action, decision.resume_from) == (
        "ResumeWithTimeLeft", "launch_new", "remediation-resnet-1"
    )  # fmt: skip
    assert decision.changes == {} and planned.run_spec == reference_state.run_spec
    assert decision.reason == (
        "Job remediation-resnet-1 reached its MaxRuntimeInSeconds (3600 s) and SageMaker stopped it "
        "(MaxRuntimeExceeded). It ran out of time, not into a problem: the next job continues from its checkpoints "
        "with the same hyperparameters (warmup_learning_rate=0.1, learning_rate=0.1 (+12 more)) and the time the "
        "execution has left."
    )


def test_out_of_time_with_no_launch_left_ends_saying_to_give_a_longer_runtime(account_input, record):
    planned = plan(record(initial_state({**account_input, "max_num_retraining": 0}), outcome="max_runtime_exceeded"))
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", "max_runtime_exceeded")
    assert planned.end_reason == decision.reason == (
        "Job remediation-resnet-1 reached its MaxRuntimeInSeconds. The launch budget is spent (1 launch of "
        "max_num_retraining=0), so it cannot be continued from its checkpoints. Ending; start a new run with a "
        "longer max_run_seconds."
    )


def test_out_of_time_with_the_stacks_instance_hours_spent_ends_naming_the_guardrail(reference_state, record):
    stopped = record(reference_state.updated(max_instance_seconds=7200), outcome="max_runtime_exceeded")
    spent = stopped.updated(history={**stopped.history.model_dump(), "instance_seconds_used": 7190})
    planned = plan(spent)
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", "instance_hours_spent")
    assert planned.end_reason == decision.reason == (
        "Job remediation-resnet-1 reached its MaxRuntimeInSeconds. The stack's instance-hours guardrail is spent: "
        "2.00 of 2.00 instance-hours used, less than a 60 s job on 1 instance(s) left (-c max_instance_hours sets "
        "it), so it cannot be continued. Ending."
    )
