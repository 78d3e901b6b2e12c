"""A hyperparameter the run fixes (run_spec ``fixed_hyperparameters``) is never changed: a remedy that would change it
is left out, said so (``why`` fixed_hyperparameter), and the next remedy of the ladder is taken; a remedy's ``also``
change on it is dropped. End to end: from the execution input to the next job's run_spec. The reasons' words are in
test_reasons.py; the execution input's refusal of a name the run does not have, in test_execution_input.py."""

from __future__ import annotations

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import changes_of, ended, facts_of, skipped, skipped_with_jobs
from tests.lambdas.remediation.recorded_runs import quiet_miss


def test_a_fixed_rate_makes_the_planner_skip_lower_learning_rate_and_take_the_next_remedy(account_input):
    """Clean digits with dropout 0.5, settled short of 0.97: the rate would be lowered (0.05 -> 0.015); with lr fixed,
    twice the epochs come instead, and lr stays as the user wrote it."""
    job, unfixed, decision = quiet_miss("mlp-dropout-clean-labels", account_input, allow_loss_changes=True)
    assert (decision.remedy, changes_of(decision)) == ("LowerLearningRate", {"lr": (0.05, 0.015)})

    job, planned, decision = quiet_miss("mlp-dropout-clean-labels", account_input, fixed_hyperparameters=["lr"])
    assert planned.fixed_hyperparameters == ["lr"]
    assert skipped_with_jobs(decision) == [("LowerLearningRate", "fixed_hyperparameter", None)]
    assert (decision.remedy, decision.next_action) == ("TrainLonger", "launch_new")
    assert changes_of(decision) == {"epochs": (12, 24)} and facts_of(decision) == {"loss_shape": ("settled", None)}
    assert planned.run_spec.hyperparameters == {**job["hyperparameters"], "epochs": 24}  # lr 0.05 as written


def test_a_fixed_main_rate_makes_an_explosion_in_the_main_phase_clip_the_gradients(account_input, record, reference_evidence):
    state = initial_state({**account_input, "add_batch_norm": True, "fixed_hyperparameters": ["learning_rate"]})
    evidence = {**reference_evidence, "initial_gradient_norm": 7.5, "phase": "main", "first_issue_step": 23}
    planned = plan(record(state, step=23, phase="main", evidence=evidence))
    decision = planned.last_attempt.decision
    assert skipped(decision) == {"LowerLearningRate": "fixed_hyperparameter"}
    # at twice the gradient norm the job measured (its first step's 7.5 here), on the network's own scale
    assert (decision.remedy, changes_of(decision)) == ("ClipGradients", {"grad_clip": (0.0, 15.0)})
    assert planned.run_spec.hyperparameters["learning_rate"] == 0.1
    assert planned.history.num_learning_rate_adjustments == 0


def test_a_remedys_also_change_on_a_fixed_hyperparameter_is_dropped(account_input, record):
    """Out of memory halves the batch and, with it, the learning rates; with the main rate fixed the batch and the
    warmup rate are halved, the main rate kept."""
    state = initial_state({**account_input, "fixed_hyperparameters": ["learning_rate"]})
    planned = plan(record(state, outcome="out_of_memory", failure_reason="OutOfMemoryError: killed"))
    decision = planned.last_attempt.decision
    assert decision.remedy == "HalveBatchSize" and decision.skipped == []
    assert changes_of(decision) == {"batch_size": (128, 64), "warmup_learning_rate": (0.1, 0.05)}


def test_a_run_whose_only_remedy_changes_a_fixed_hyperparameter_ends_saying_so(account_input, record):
    script = {
        "source_dir": "s3://remediation-artifacts-123456789012/code/mlp-0123456789abcdef/sourcedir.tar.gz",
        "entry_point": "train.py",
        "hyperparameters": {"lr": 2.0, "grad_clip": 0, "epochs": 3},
        "remedies": {"ExplodingTensor": [{"hyperparameter": "lr", "multiply_by": 0.1, "min": 1e-4}]},
        "fixed_hyperparameters": ["lr"],
    }
    state = initial_state({**account_input, **script})
    planned = plan(record(state, step=7, phase=None))
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", "no_remedy_left") and decision.cause == "ExplodingTensor"
    assert skipped_with_jobs(decision) == [("multiply lr by 0.1 (not below 0.0001)", "fixed_hyperparameter", None)]
    assert planned.run_spec == state.run_spec
