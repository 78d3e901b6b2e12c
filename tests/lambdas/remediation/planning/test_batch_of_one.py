"""A job whose training set leaves one sample in an epoch's last batch, which a batch-norm layer refuses in training:
a failure with its own remedy (one sample less per batch), not the end of the run as an error in the code."""

from __future__ import annotations

import pytest

from lambdas.plan_handler import end_error
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.monitoring import verdict as monitoring
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.text.decision_text import headline
from lambdas.remediation.text.notifications import issues_found
from tests.lambdas.remediation.decision_fields import changes_of, ended
from tests.lambdas.remediation.recorded_runs import finish, recorded, start

JOB = "remediation-mlp-0123456789-001"
BATCH_NORM = (
    "AlgorithmError: ValueError: Expected more than 1 value per channel when training, got input size "
    "torch.Size([1, 128])"
)


def _failed(reason: str) -> dict:
    return {"TrainingJobName": JOB, "TrainingJobStatus": "Failed", "SecondaryStatus": "Failed", "FailureReason": reason}


@pytest.mark.parametrize(
    ("reason", "outcome"),
    [
        (BATCH_NORM, "batch_of_one"),
        ("AlgorithmError: ValueError: Expected more than 1 spatial element when training, got input size "
         "torch.Size([1, 8, 1])", "batch_of_one"),  # InstanceNorm's
        ("AlgorithmError: ValueError: Expected input batch_size (1) to match target batch_size (2).", "algorithm_error"),
    ],
)  # fmt: skip
def test_the_monitor_reads_a_batch_of_one_from_the_failure_reason(account_input, reason, outcome):
    state = initial_state(account_input).with_new_attempt(JOB)
    decision = monitoring.decide(_failed(reason), [], state)
    assert (decision.next_step, decision.outcome) == ("plan", outcome)


def test_a_batch_of_one_is_answered_by_one_sample_less_per_batch_and_the_next_job_completes(account_input):
    """A real job (examples/mlp with batch norm, 1,600 training samples at batch size 123 = 13 x 123 + 1): it failed
    at the first epoch's last batch; the next job, at 122, completed and met the objective."""
    run = recorded("mlp-batch-norm-batch-of-one")
    first, second = run["jobs"]
    assert "Expected more than 1 value per channel when training" in first["describe"]["FailureReason"]
    state = finish(start(run, account_input), first)
    assert state.last_attempt.outcome == "batch_of_one"
    planned = plan(state)
    decision = planned.last_attempt.decision
    assert decision.remedy == "BatchSizeOneSmaller" and decision.resume_from is None
    assert planned.run_spec.hyperparameters == {**first["hyperparameters"], "batch-size": 122}
    assert decision.cause == "batch_of_one" and changes_of(decision) == {"batch-size": (123, 122)}
    assert headline(state.last_attempt, state) == (
        f"Job {first['describe']['TrainingJobName']} failed on a training batch of one sample (AlgorithmError: "
        "ValueError: Expected more than 1 value per channel when training, got input size torch.Size([1, 128]))"
    )
    assert issues_found(planned).subject == (
        "[remediation] A training batch of one sample: lowering batch-size to 122, relaunching (attempt 2..."
    )
    met = finish(planned, second)
    assert met.last_attempt.outcome == "completed" and met.last_attempt.objective_value == 0.965


def test_a_script_without_a_batch_size_knob_ends_saying_what_avoids_it(account_input):
    run = recorded("mlp-batch-norm-batch-of-one")
    state = start(run, account_input, hyperparameter_names={"learning_rate": "lr", "num_epochs": "epochs"})
    planned = plan(finish(state, run["jobs"][0]))
    assert planned.next_action == "end"
    assert ended(planned.last_attempt.decision) == ("none", "end", "batch_of_one")  # its words: test_reasons.py
    assert planned.run_spec == state.run_spec
    assert end_error(planned) == "TrainingBatchOfOne"
