"""Every kind of reason the planner gives (``lambdas.remediation.planning.reasons``), whole, one test per kind of
text: a launch (a rule fired; a quiet miss; planned from an earlier job; a remedy not tried again or not tried; a rule's
bound moved for the data; what the next job does with the checkpoints), a limit (the relaunch budget; the stack's
instance-hours), no remedy left (the training labels and what answers them; the remedies exhausted; a loss change the
run does not allow; a hyperparameter the run fixes; no remedies declared) and data that no remedy can fix. The other
planner and monitor tests assert the decision's structured fields; the words are held here. Built from recorded runs
(``recorded_runs``) and small hand-built states (``conftest``)."""

from __future__ import annotations

import pytest

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from tests.lambdas.remediation.decision_fields import ended
from tests.lambdas.remediation.recorded_runs import (
    finish,
    quiet_miss,
    recorded,
    scored_higher,
    start,
    without_optimizer,
)

#: A user's script with remedies of its own (tests/lambdas/remediation/planning/test_declared_remedies.py's).
SCRIPT = {
    "source_dir": "s3://remediation-artifacts-123456789012/code/mlp-0123456789abcdef/sourcedir.tar.gz",
    "entry_point": "train.py",
    "hyperparameters": {"lr": 2.0, "grad_clip": 0, "epochs": 3},
    "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
    "remedies": {
        "ExplodingTensor": [
            {"hyperparameter": "grad_clip", "set_to": 1.0, "name": "ClipGradients"},
            {"hyperparameter": "lr", "multiply_by": 0.1, "min": 1e-4, "note": "Large steps overshoot."},
        ],
        "objective_missed": [{"hyperparameter": "epochs", "multiply_by": 2, "max": 12}],
    },
}
EVIDENCE = {"initial_loss": 2.3, "initial_gradient_norm": 4.1, "last_finite_loss": 9.7e3, "max_gradient_norm": 3.2e5}


def reason_of(state) -> str:
    """The last decision's reason; when the run ends, the state's end_reason is the same text."""
    decision = state.last_attempt.decision
    if decision.next_action == "end":
        assert state.end_reason == decision.reason
    return decision.reason


# --------------------------------------------------------------------------- launches


def test_a_rule_fired_and_the_evidence_remedy_says_why_with_the_numbers(reference_state, record):
    planned = plan(record(reference_state))
    assert planned.last_attempt.decision.remedy == "AddBatchNorm"
    assert reason_of(planned) == (
        "ExplodingTensor fired at step 2 (warmup phase, 20 steps per epoch, tensor gradient_norm, the rule's value "
        "nan). Remedy 5 of 12 for ExplodingTensor in the evidence remedies, AddBatchNorm (turn add_batch_norm on and "
        "cap warmup_learning_rate at 0.1), applies because it happened in the warmup phase and at step 2, before "
        "step 10 and the initial gradient norm 512.3 is above 50. An initialisation-scale gradient norm with no "
        "batch norm means the network is badly scaled at initialisation, and blowing up in the first steps of warmup "
        "means a lower warmup rate would only delay the explosion. Rates judged in SGD's range (usual start 0.1, out "
        "of range above 0.4, too small below 0.001; assumed: the job reported no optimizer). Evidence: initial "
        "gradient norm 512.3, initial loss 31.7, last finite loss 2.9e+06, max gradient norm 8.4e+07. Next: adding "
        "batch norm."
    )


def test_a_rule_fired_and_the_aws_samples_ladder_answers_any_rule(account_input, record):
    planned = plan(record(initial_state({**account_input, "policy": "anchor"})))
    assert reason_of(planned) == (
        "ExplodingTensor fired at step 2 (warmup phase, 20 steps per epoch, tensor gradient_norm, the rule's value "
        "nan). Remedy 1 of 3 for * in the AWS sample's ladder, HalveWarmupLearningRate (multiply "
        "warmup_learning_rate by 0.5 (not below 0.0025)), applies. Evidence: initial gradient norm 512.3, initial "
        "loss 31.7, last finite loss 2.9e+06, max gradient norm 8.4e+07. Next: lowering warmup_learning_rate 0.1 -> "
        "0.05."
    )


def test_a_declared_remedy_is_named_and_an_unnamed_one_described_with_its_note(account_input, record):
    first = plan(record(initial_state({**account_input, **SCRIPT}), step=7, phase=None, evidence=EVIDENCE))
    assert reason_of(first) == (
        "ExplodingTensor fired at step 7 (tensor gradient_norm, the rule's value nan). Remedy 1 of 2 for "
        "ExplodingTensor in the declared remedies, ClipGradients (set grad_clip to 1), applies. Evidence: initial "
        "gradient norm 4.1, initial loss 2.3, last finite loss 9700, max gradient norm 3.2e+05. Next: raising "
        "grad_clip 0 -> 1."
    )
    second = plan(record(first, step=5, phase=None, evidence=EVIDENCE))
    assert reason_of(second) == (
        "ExplodingTensor fired at step 5 (tensor gradient_norm, the rule's value nan). Remedy 2 of 2 for "
        "ExplodingTensor in the declared remedies, multiply lr by 0.1 (not below 0.0001), applies. Large steps "
        "overshoot. Evidence: initial gradient norm 4.1, initial loss 2.3, last finite loss 9700, max gradient norm "
        "3.2e+05. Next: lowering lr 2 -> 0.2."
    )


def test_a_quiet_miss_says_what_the_loss_did_and_that_the_next_job_gets_the_checkpoint(account_input):
    _, planned, _ = quiet_miss("mlp-sgd-one-epoch-still-falling", account_input)
    assert reason_of(planned) == (
        "Job remediation-job-cfc1240413-001 completed with quiet rules but validation:accuracy = 0.8944 missed "
        "validation:accuracy >= 0.9 by 0.0056. Remedy 14 of 20 for objective_missed in the evidence remedies, "
        "TrainLonger (multiply epochs by 4 (not above 200)), applies because the training loss fell 80% over steps "
        "0-22 (2.796 to 0.5518) and was still falling: its last quarter was 44% below the quarter before. Training "
        "was stable and still improving when it stopped: more epochs. Next: raising epochs 1 -> 4. The next job gets "
        "the checkpoint file remediation-job-cfc1240413-001 left: a script that resumes from its checkpoints "
        "continues where remediation-job-cfc1240413-001 stopped instead of from step 0."
    )


def test_a_settled_loss_whose_last_quarter_rose_slightly_gave_back_part_of_its_descent(account_input):
    """Not 'added -0%' (the wording before cdad555)."""
    _, planned, _ = quiet_miss("mlp-augmented-clean-labels", account_input)
    assert reason_of(planned) == (
        "Job remediation-job-eac73fc62c-001 completed with quiet rules but validation:accuracy = 0.9611 missed "
        "validation:accuracy >= 0.97 by 0.0089. Remedy 15 of 20 for objective_missed in the evidence remedies, "
        "LowerLearningRate (multiply lr by 0.3 (not below 0.0001)), applies because the training loss fell 80% over "
        "steps 0-286 (4.41 to 0.9032) and settled: its last quarter gave back 0.4% of that descent. The training "
        "loss settled short of the objective: smaller steps settle lower. Rates judged in SGD's range (usual start "
        "0.1, out of range above 0.4, too small below 0.001; the optimizer the job reported). Next: lowering lr 0.05 "
        "-> 0.015."
    )


def test_planned_from_an_earlier_job_it_goes_back_to_its_settings_and_says_what_is_not_tried_again(account_input):
    """The one-epoch MLP, its four-epoch job read as steady (no noise), both read as scoring 0.06 higher than they did
    (above what guessing the common class scores, so not two jobs that learned nothing): a point lower is worse."""
    run = recorded("mlp-one-epoch-at-chance")
    first, longer = (scored_higher(job, 0.06) for job in run["jobs"][:2])
    metrics = longer["rule_status"]["metrics"]
    steady = {name: {**metric, "values": [metric["values"][-1]] * len(metric["values"])} for name, metric in metrics.items()}
    longer = {**longer, "rule_status": {**longer["rule_status"], "metrics": steady}}
    planned = plan(finish(plan(finish(start(run, account_input), first)), longer))
    assert reason_of(planned) == (
        "Job remediation-job-d5bbeb5352-002 completed with quiet rules but validation:accuracy = 0.3483 missed "
        "validation:accuracy >= 0.8 by 0.4517. Back to job 1's settings, the closest to the objective so far "
        "(validation:accuracy = 0.3583); from there: Remedy 16 of 25 for objective_missed in the evidence remedies, "
        "RaiseLearningRateToUsual (raise lr to at least 0.1), applies because the training loss fell 1% over steps "
        "0-18 (1.395 to 1.387): it never learned. The updates are too small to move the loss; 0.1 is SGD's usual "
        "start. Rates judged in SGD's range (usual start 0.1, out of range above 0.4, too small below 0.001; the "
        "optimizer the job reported). Not tried again: after TrainLonger (job 2), validation:accuracy went from "
        "0.3583 to 0.3483. Next: raising lr 0.05 -> 0.1, lowering epochs 4 -> 1."
    )


def test_a_remedy_that_would_repeat_a_jobs_settings_is_not_tried_again(account_input, record, reference_evidence):
    bn = {**account_input, "add_batch_norm": True}
    falling = {**reference_evidence, "initial_loss": 2.3, "last_finite_loss": 2.25, "phase": "main"}
    rising = {**falling, "last_finite_loss": 2.9}
    state = plan(record(initial_state(bn), rule="LossNotDecreasing", phase="main", step=30, evidence=rising, kind="rising"))
    planned = plan(record(state, rule="LossNotDecreasing", phase="main", step=30, evidence=falling, kind="flat"))
    assert reason_of(planned) == (
        "LossNotDecreasing fired at step 30 (main phase, 20 steps per epoch, tensor gradient_norm, the rule's value "
        "nan). Remedy 29 of 29 for LossNotDecreasing in the evidence remedies, LowerLearningRate (multiply "
        "learning_rate by 0.5 (not below 0.0001)), applies. The loss stopped decreasing: the main rate overshoots. "
        "Rates judged in SGD's range (usual start 0.1, out of range above 0.4, too small below 0.001; assumed: the "
        "job reported no optimizer). Evidence: initial gradient norm 512.3, initial loss 2.3, last finite loss 2.25, "
        "max gradient norm 8.4e+07. Not tried again: RaiseLearningRate would repeat job 1's settings. Next: lowering "
        "learning_rate 0.05 -> 0.025."
    )


def test_a_remedy_on_a_fixed_hyperparameter_is_not_tried_and_the_next_one_is(account_input):
    _, planned, _ = quiet_miss("mlp-dropout-clean-labels", account_input, fixed_hyperparameters=["lr"])
    assert reason_of(planned) == (
        "Job remediation-job-92c7e8f5fa-001 completed with quiet rules but validation:accuracy = 0.9444 missed "
        "validation:accuracy >= 0.97 by 0.0256. Remedy 18 of 22 for objective_missed in the evidence remedies, "
        "TrainLonger (multiply epochs by 2 (not above 200)), applies because the training loss fell 76% over steps "
        "0-286 (3.208 to 0.7632) and settled: its last quarter added 4% to that descent. Training was stable but too "
        "short to reach the objective: more epochs. Not tried: LowerLearningRate would change lr, which "
        "fixed_hyperparameters keeps. Next: raising epochs 12 -> 24. The next job gets the 2 checkpoint files "
        "remediation-job-92c7e8f5fa-001 left: a script that resumes from its checkpoints continues where "
        "remediation-job-92c7e8f5fa-001 stopped instead of from step 0."
    )


def test_a_bound_moved_above_what_the_data_measured_is_said_with_the_resume_directory(account_input):
    """ClassImbalance stopped the job on the label counts (19.5 to 1): class weighting answers it and the next job's
    rule is judged on its training (a job whose checkpoint count the debugger did not report gets the directory)."""
    mlp = {
        **SCRIPT, "remedies": None, "objective": None,
        "hyperparameters": {"lr": 0.05, "epochs": 6, "class_weighting": "none", "batch-size": 64},
        "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size"},
        "rules": ["ExplodingTensor", {"name": "ClassImbalance", "parameters": {"samples": "2000"}}],
    }  # fmt: skip
    state = initial_state({**account_input, **{key: value for key, value in mlp.items() if value is not None}})
    stopped = state.with_new_attempt("remediation-mlp-1").with_last_attempt(
        outcome="issues_found",
        issue={"rule": "ClassImbalance", "step": 31, "tensor": "labels", "value": 19.5, "kind": "imbalance"},
        rule_statuses=[{"name": "ClassImbalance", "status": "IssuesFound", "step": 31}],
        evidence={"initial_loss": 2.3, "last_finite_loss": 0.4, "first_issue_step": 31, "last_step": 31},
    )
    assert reason_of(plan(stopped)) == (
        "ClassImbalance fired at step 31 (tensor labels, the rule's value 19.5). Remedy 1 of 1 for ClassImbalance "
        "in the evidence remedies, WeightClasses (set class_weighting to balanced), applies. Weighting the loss by "
        "inverse class frequency makes the rare classes count as much as the common ones. Evidence: initial loss "
        "2.3, last finite loss 0.4. Next: setting class_weighting to balanced (was none). The next job gets "
        "remediation-mlp-1's checkpoint directory: a script that resumes from its checkpoints continues where "
        "remediation-mlp-1 stopped; one that wrote none trains from step 0. ClassImbalance's imbalance (19.5) "
        "describes the data, which this remedy allows for but does not change, so the next job's ClassImbalance "
        "gets threshold_imbalance=39 (2 x the measured value) and judges the training only."
    )


def test_a_script_that_left_no_checkpoints_is_told_the_next_job_trains_from_step_0(account_input):
    run = recorded("ddp-script-without-checkpoints")
    assert reason_of(plan(finish(start(run, account_input), run["jobs"][0]))) == (
        "Job remediation-job-f1bab65e32-001 completed with quiet rules but validation:accuracy = 0.9756 missed "
        "validation:accuracy >= 0.99 by 0.0144. Remedy 12 of 20 for objective_missed in the evidence remedies, "
        "TrainLonger (multiply epochs by 4 (not above 200)), applies because epochs 1 is below 3. Fewer than 3 "
        "epochs are too few to tell a loss that settled or never fell from one that falls slowly: more epochs before "
        "the rate or the network is changed. Next: raising epochs 1 -> 4. remediation-job-f1bab65e32-001 left no "
        "checkpoints (its script writes none, or it stopped before the first), so the next job trains from step 0."
    )


def test_what_the_training_labels_show_is_said_too_when_another_cause_is_answered(account_input):
    _, planned, _ = quiet_miss("mlp-noisy-labels-past-best", account_input)
    assert reason_of(planned) == (
        "Job remediation-job-2c5d8f2ef2-001 completed with quiet rules but validation:accuracy = 0.5194 missed "
        "validation:accuracy >= 0.75 by 0.2306. Remedy 1 of 20 for objective_missed in the evidence remedies, "
        "StopAtBestEpoch (set epochs to the epoch at which the objective was met at its best), applies because "
        "validation:accuracy met the objective (>= 0.75) after epoch 2 of 12, at 0.7972 (its best), and ended at "
        "0.5194. The held-out metric met the objective at that epoch and fell below it as training went on: the same "
        "run stopped there (a script that seeds its training repeats that epoch's result). Also: the model learns "
        "its training labels by heart: over steps 233-286 the model's top class matched 70% of its training labels, "
        "yet it scored 0.5194 on held-out data. Next: lowering epochs 12 -> 2."
    )


def test_a_loss_change_the_run_allows_says_so(account_input):
    _, planned, _ = quiet_miss("mlp-noisy-labels-robust-in-job", account_input, allow_loss_changes=True)
    assert reason_of(planned) == (
        "Job remediation-job-70cf617e3e-001 completed with quiet rules but validation:accuracy = 0.7056 missed "
        "validation:accuracy >= 0.9 by 0.1944. Remedy 9 of 20 for objective_missed in the evidence remedies, "
        "RobustLossInJob (set the debugger's robust_loss to generalized_cross_entropy), applies because the training "
        "labels look noisy: over steps 233-286 the model's top class matched 47% of its training labels, yet it "
        "scored 0.7056 on held-out data; a model fits the labels it trains on at least as well as unseen ones unless "
        "many of them are wrong. The next job's debugger trains the script on the generalized cross-entropy (Zhang "
        "and Sabuncu, NeurIPS 2018, q=0.7) in place of its cross-entropy: a sample whose label the model finds "
        "unlikely, as most wrong labels are once the right ones are learnt, pulls the weights less; evaluation keeps "
        "the plain loss. It changes the training loss, which this run allows. Next: setting the debugger's "
        "robust_loss to generalized_cross_entropy (was off)."
    )


def test_a_failure_kind_is_answered_without_the_rules_evidence(account_input):
    run = recorded("mlp-batch-norm-batch-of-one")
    assert reason_of(plan(finish(start(run, account_input), run["jobs"][0]))) == (
        "Job remediation-job-a294b03e0e-001 failed on a training batch of one sample (AlgorithmError: ValueError: "
        "Expected more than 1 value per channel when training, got input size torch.Size([1, 128])). Remedy 1 of 1 "
        "for batch_of_one in the evidence remedies, BatchSizeOneSmaller (add -1 to batch-size (not below 2)), "
        "applies. A batch-norm layer needs two or more samples per training batch, and the training set's size "
        "leaves one in the last: one sample less per batch leaves more there (setting drop_last=True in the "
        "script's DataLoader is the fix that holds for any size). Next: lowering batch-size 123 -> 122."
    )


# --------------------------------------------------------------------------- limits


def test_the_relaunch_budget_spent_names_the_remedy_it_would_have_tried(account_input, record):
    state = initial_state({**account_input, "policy": "anchor"})
    while state.next_action == "launch_new":
        state = plan(record(state))
    assert ended(state.last_attempt.decision) == ("none", "end", "budget_spent")
    assert reason_of(state) == (
        "ExplodingTensor fired at step 2 (warmup phase, 20 steps per epoch, tensor gradient_norm, the rule's value "
        "nan). The relaunch budget is spent (7 launches of max_num_retraining=7); the next remedy would have been "
        "ScaleLearningRate (lowering learning_rate 0.1 -> 0.09). Ending."
    )


def test_a_budget_of_no_relaunch_counts_one_launch(account_input, record):
    planned = plan(record(initial_state({**account_input, "max_num_retraining": 0})))
    assert reason_of(planned) == (
        "ExplodingTensor fired at step 2 (warmup phase, 20 steps per epoch, tensor gradient_norm, the rule's value "
        "nan). The relaunch budget is spent (1 launch of max_num_retraining=0); the next remedy would have been "
        "AddBatchNorm (adding batch norm). Ending."
    )


def test_the_budget_spent_on_a_miss_the_labels_explain_says_what_answers_them(account_input):
    run = recorded("mlp-noisy-labels-small")
    state = start(run, account_input, max_num_retraining=1, debugger_robust_loss="off")
    planned = plan(finish(state, run["jobs"][0]))
    assert reason_of(planned) == (
        'Job remediation-job-cacc676a63-001 completed with quiet rules but validation:accuracy = 0.7056 missed '
        'validation:accuracy >= 0.9 by 0.1944. The relaunch budget is spent (1 launch of max_num_retraining=1); '
        'the next remedy would have been SmallerStepsOnNoisyLabels (lowering lr 0.05 -> 0.015). The training '
        "labels look noisy: over steps 233-286 the model's top class matched 47% of its training labels, yet it "
        'scored 0.7056 on held-out data; a model fits the labels it trains on at least as well as unseen ones '
        'unless many of them are wrong: check and correct the training labels (a share of them disagree with what '
        'the rest teach the model); more epochs would fit more of the wrong ones. RobustLossInJob would answer '
        "it, but it changes the training loss (the debugger's robust_loss), which this run does not allow: set "
        'allow_loss_changes to true in the run_spec to let the product try it. Ending.'
    )


def test_the_budget_spent_where_a_loss_change_would_answer_says_how_to_allow_it(account_input):
    run = recorded("mlp-noisy-labels-small")
    planned = plan(finish(start(run, account_input, max_num_retraining=1), run["jobs"][0]))
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", "budget_spent")
    assert [(skip.remedy, skip.why) for skip in decision.skipped] == [("RobustLossInJob", "not_allowed")]
    assert "set allow_loss_changes to true in the run_spec to let the product try it." in decision.reason


def test_the_stacks_instance_hours_spent_ends_the_run(reference_state, record):
    stopped = record(reference_state.updated(max_instance_seconds=7200))
    spent = stopped.updated(history={**stopped.history.model_dump(), "instance_seconds_used": 7190})
    planned = plan(spent)
    assert ended(planned.last_attempt.decision) == ("none", "end", "instance_hours_spent")
    assert reason_of(planned) == (
        "ExplodingTensor fired at step 2 (warmup phase, 20 steps per epoch, tensor gradient_norm, the rule's value "
        "nan). The stack's instance-hours guardrail is spent: 2.00 of 2.00 instance-hours used, less than a 60 s "
        "job on 1 instance(s) left (-c max_instance_hours sets it); the next remedy would have been AddBatchNorm "
        "(adding batch norm). Ending."
    )


# --------------------------------------------------------------------------- no remedy left


def test_training_labels_no_remedy_answers_end_with_the_advice_and_the_closest_jobs_settings(account_input):
    """Noisy labels, the robust loss not allowed: smaller steps helped once (0.8056), then made it worse (0.7861)."""
    run = recorded("mlp-noisy-labels-small")
    state = start(run, account_input, debugger_robust_loss="off")
    for job in run["jobs"]:
        state = plan(finish(state, job))
    assert reason_of(state) == (
        "Job remediation-job-cacc676a63-003 completed with quiet rules but validation:accuracy = 0.7861 missed "
        "validation:accuracy >= 0.9 by 0.1139. The training labels look noisy: over steps 233-286 the model's top "
        "class matched 46% of its training labels, yet it scored 0.8056 on held-out data; a model fits the labels "
        "it trains on at least as well as unseen ones unless many of them are wrong. No remedy in the evidence "
        "remedies answers that: check and correct the training labels (a share of them disagree with what the rest "
        "teach the model); more epochs would fit more of the wrong ones. Not tried again: after "
        "SmallerStepsOnNoisyLabels (job 3), validation:accuracy went from 0.8056 to 0.7861. RobustLossInJob would "
        "answer it, but it changes the training loss (the debugger's robust_loss), which this run does not allow: "
        "set allow_loss_changes to true in the run_spec to let the product try it. Ending; job 2 came closest to "
        "the objective (validation:accuracy = 0.8056), with lr=0.015, epochs=12, hidden=32, depth=1."
    )


def test_the_remedies_exhausted_say_why_each_no_longer_applies_and_what_changed(script_state, record):
    state = script_state
    for _ in range(2):
        state = plan(record(state, outcome="objective_missed", objective_value=0.71))
    assert reason_of(plan(record(state, outcome="objective_missed", objective_value=0.84))) == (
        "Job remediation-resnet-3 completed with quiet rules but validation:accuracy = 0.84 missed "
        "validation:accuracy >= 0.9 by 0.06. No remedy left (objective_missed: multiply epochs by 2 (not above 12): "
        "epochs 12 -> 24 would be above 12). Changed so far: epochs 3 -> 6 -> 12. Ending with lr=2, grad_clip=0, "
        "epochs=12."
    )


def test_what_changed_so_far_goes_from_value_to_value(account_input):
    """Issue 20: 'Changed so far: lr x1' read like a factor."""
    run = recorded("mlp-lr-50-as-integer")
    remedies = {"ExplodingTensor": [{"hyperparameter": "lr", "multiply_by": 0.1, "min": 1}]}
    state = plan(finish(start(run, account_input, remedies=remedies), run["jobs"][0]))
    assert reason_of(plan(finish(state, run["jobs"][1]))) == (
        "ExplodingTensor fired at step 7: 1780 NaN or infinite value(s) in gradient/MLP_layers.0.linear.weight at "
        "step 7. No remedy left (ExplodingTensor: multiply lr by 0.1 (not below 1): lr 5 -> 0.5 would be below 1). "
        "Changed so far: lr 50 -> 5. Ending with lr=5, epochs=2."
    )


def test_a_loss_change_the_run_does_not_allow_is_named_with_how_to_allow_it(account_input):
    run = recorded("mlp-rare-class-weighted-in-job")
    assert reason_of(plan(finish(start(run, account_input), run["jobs"][0]))) == (
        "Job remediation-job-489b871246-001 completed with quiet rules but validation:accuracy = 0.8944 missed "
        "validation:accuracy >= 0.9 by 0.0056. The training labels are imbalanced: class 0 made 24 of the 15,600 "
        "labels the job trained on (0.2%), class 3 1,860 (78 to 1; 10 to 1 or more is imbalanced). No remedy in the "
        "evidence remedies answers that: weight the loss by class: give the script a class-weighting argument and "
        'map it in hyperparameter_names as class_weighting (the evidence remedies set it to "balanced"), or '
        "resample the rare classes in the training channel. WeightClassesInJob would answer it, but it changes the "
        "training loss (the debugger's class_weighting), which this run does not allow: set allow_loss_changes to "
        "true in the run_spec to let the product try it. Ending with lr=0.05, epochs=12."
    )


def test_the_remedy_list_is_shortened_to_fit_and_keeps_why_not_now_the_consent_and_whole_settings(account_input):
    """A held-out metric falling from its best while the training loss still falls: more epochs are guarded against,
    the robust loss not allowed; the list of remedies is what is clipped, the settings end whole, then how many more."""
    run = recorded("logline-noisy-labels-falling-held-out")
    assert reason_of(plan(finish(start(run, account_input), run["jobs"][0]))) == (
        "Job remediation-job-df6012c3b2-001 completed with quiet rules but validation:accuracy = 0.8222 missed "
        "validation:accuracy >= 0.9 by 0.0778. No remedy left (objective_missed: TrainLonger: not now, "
        "validation:accuracy was best after report 6 of 12, at 0.8944, and its last 4 averaged 0.7958: more of the "
        "same training takes it further from its best; objective_missed: RobustLossPastPeak: not allowed (it changes "
        "the training loss); objective_missed: StopAtBestEpoch: its condition {'objective_met_before_end': True} "
        "does not hold; objective_missed: RateForTargetScale: its condition {'target_scale_above': 30.0, "
        "'hyperparameters_above': {'learning-rate': 0.001}} does not hold; objective_missed: LowerRateOnDivergence: "
        "its condition {'diverged': ['rising', 'spiking'], 'hyperparameters_above': {'learning-rate': 0.4}} does not "
        "hold; objective_missed: LearningRateIntoRange: its condition {'hyperparameters_above': {'lea.... "
        "RobustLossPastPeak would answer it, but it changes the training loss (the debugger's robust_loss), which "
        "this run does not allow: set allow_loss_changes to true in the run_spec to let the product try it. Ending "
        "with learning-rate=0.015, n-epochs=12, bs=32, n-layers=3 (+8 more)."
    )


def test_a_remedy_on_a_fixed_hyperparameter_is_named_when_the_run_ends(account_input, record):
    script = {**SCRIPT, "remedies": {"ExplodingTensor": [{"hyperparameter": "lr", "multiply_by": 0.1, "min": 1e-4}]},
              "fixed_hyperparameters": ["lr"]}  # fmt: skip
    script.pop("objective")
    planned = plan(record(initial_state({**account_input, **script}), step=7, phase=None, evidence=EVIDENCE))
    assert reason_of(planned) == (
        "ExplodingTensor fired at step 7 (tensor gradient_norm, the rule's value nan). No remedy left "
        '(ExplodingTensor: multiply lr by 0.1 (not below 0.0001): kept fixed). Not tried: multiply lr by 0.1 (not '
        'below 0.0001) would change lr, which fixed_hyperparameters keeps. Ending with lr=2, grad_clip=0, '
        'epochs=3.'
    )


def test_a_failure_kind_without_remedies_says_what_it_is(account_input, record):
    state = initial_state({**account_input, "policy": "anchor"})  # the AWS sample's ladder has none for it
    planned = plan(record(state, outcome="out_of_memory", failure_reason="OutOfMemoryError: killed"))
    assert reason_of(planned) == (
        "Job remediation-resnet-1 ran out of memory (OutOfMemoryError: killed). No remedies are declared for "
        "out_of_memory (the training process ran out of memory). Ending with warmup_learning_rate=0.1, "
        "learning_rate=0.1 (+12 more)."
    )


def test_a_batch_of_one_without_a_batch_size_knob_says_what_avoids_it(account_input):
    run = recorded("mlp-batch-norm-batch-of-one")
    state = start(run, account_input, hyperparameter_names={"learning_rate": "lr", "num_epochs": "epochs"})
    assert reason_of(plan(finish(state, run["jobs"][0]))) == (
        "Job remediation-job-a294b03e0e-001 failed on a training batch of one sample (AlgorithmError: ValueError: "
        "Expected more than 1 value per channel when training, got input size torch.Size([1, 128])). No remedies "
        "are declared for batch_of_one (a training batch of one sample reached a batch-norm layer, which needs two "
        "or more: the training set's size leaves one sample in its last batch (drop_last=True in the script's "
        "DataLoader, or another batch size, avoids it)). Ending with lr=0.05, epochs=3, batch-size=123, "
        "batch-norm=true."
    )


def test_a_missed_objective_without_its_own_remedies_does_not_take_the_any_rule_list(account_input, record):
    remedies = {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4}]}
    state = initial_state({**account_input, **SCRIPT, "remedies": remedies})
    assert reason_of(plan(record(state, outcome="objective_missed", objective_value=0.5))) == (
        "Job remediation-resnet-1 completed with quiet rules but validation:accuracy = 0.5 missed "
        "validation:accuracy >= 0.9 by 0.4. No remedies are declared for objective_missed (the job completed with "
        "quiet rules but missed the objective). Ending with lr=2, grad_clip=0, epochs=3."
    )


def with_evidence(job, **fields):
    """The same recorded job as a debugger that reported ``fields`` too wrote it."""
    return {**job, "rule_status": {**job["rule_status"], "evidence": {**job["rule_status"]["evidence"], **fields}}}


def test_a_run_ending_after_a_remedy_made_it_worse_lists_the_remedies_from_the_closest_jobs_settings(account_input):
    """The one-epoch SGD job (0.8944) trained four times longer, that job read as scoring 0.85: the list is read at
    job 1's settings (TrainLonger: epochs 1 -> 4), and the settings to keep are job 1's."""
    run = recorded("mlp-sgd-one-epoch-still-falling")
    first = run["jobs"][0]
    state = plan(finish(start(run, account_input), first))
    worse = {
        **first,
        "hyperparameters": dict(state.run_spec.hyperparameters),
        "describe": {**first["describe"], "TrainingJobName": "remediation-job-second",
                     "FinalMetricDataList": [{"MetricName": "validation:accuracy", "Value": 0.85}]},
    }  # fmt: skip
    assert reason_of(plan(finish(state, worse))) == (
        "Job remediation-job-second completed with quiet rules but validation:accuracy = 0.85 missed "
        "validation:accuracy >= 0.9 by 0.05. No remedy left (objective_missed: TrainLonger: not tried again (the "
        "objective got worse after it, job 2); objective_missed: StopAtBestEpoch: its condition "
        "{'objective_met_before_end': True} does not hold; objective_missed: RateForTargetScale: its condition "
        "{'target_scale_above': 30.0, 'hyperparameters_above': {'lr': 0.001}} does not hold; objective_missed: "
        "LowerRateOnDivergence: its condition {'diverged': ['rising', 'spiking'], 'hyperparameters_above': {'lr': "
        "0.4}} does not hold; objective_missed: LearningRateIntoRange: its condition {'hyperparameters_above': "
        "{'lr': 0.4}} does not hold; objective_missed: LearningRateToUsual: its condition {'hyperparameters_below': "
        "{'lr': 0.001}} does not hold; objective_missed: LowerRateOnDivergence: its condition {'diverged': "
        "['rising', 'spiking']} does not hold; objective_missed: LowerRateLearnedNoth.... Not tried again: after "
        "TrainLonger (job 2), validation:accuracy went from 0.8944 to 0.85. Changed so far: epochs 1 -> 4. Ending; "
        "job 1 came closest to the objective (validation:accuracy = 0.8944), with lr=0.01, epochs=1."
    )


def test_a_short_match_the_inputs_explain_says_why_the_labels_were_not_blamed(account_input):
    """The short-match run as a debugger that saw none of the training inputs come back unchanged (augmented)."""
    run = recorded("logline-noisy-labels-short-match")
    state = start(run, account_input, allow_loss_changes=True)
    for job in run["jobs"][:3]:
        state = plan(finish(state, with_evidence(job, training_inputs_repeated=0.0)))
    assert reason_of(state) == (
        "Job remediation-job-47948c672a-003 completed with quiet rules but validation:accuracy = 0.7217 missed "
        "validation:accuracy >= 0.8 by 0.0783. No remedy left (objective_missed: LowerLearningRate: not tried again "
        "(the objective got worse after it, job 2); objective_missed: TrainLonger: would repeat job 3's settings; "
        "objective_missed: StopAtBestEpoch: its condition {'objective_met_before_end': True} does not hold; "
        "objective_missed: LowerRateOnDivergence: its condition {'diverged': ['rising', 'spiking'],.... Over steps "
        "394-466 the model's top class matched 66% of its training labels, yet it scored 0.7417 on held-out data: 9 "
        "points short; it trained on inputs that changed between epochs (0% of them seen again: augmented in the "
        "loader, or drawn afresh), which lowers that match as wrong labels do, so the match says nothing of the "
        "labels. Not tried again: after LowerLearningRate (job 2), validation:accuracy went from 0.7417 to 0.6483; "
        "TrainLonger would repeat job 3's settings. Changed so far: learning-rate 0.002 -> 0.0006 -> 0.002; n-epochs "
        "12 -> 24. Ending; job 1 came closest to the objective (validation:accuracy = 0.7417), with "
        "learning-rate=0.002, n-epochs=12, bs=64, n-layers=2 (+8 more)."
    )


def test_a_long_launch_reason_keeps_every_change_it_makes(account_input):
    run = recorded("logline-noisy-labels-short-match")
    state = start(run, account_input, allow_loss_changes=True)
    for job in run["jobs"][:3]:
        state = plan(finish(state, with_evidence(job, training_inputs_repeated=0.9167)))
    decision = state.last_attempt.decision
    assert set(decision.changes) == {"n-epochs", "debugger_robust_loss"}
    assert decision.reason.endswith(
        "Next: lowering n-epochs 24 -> 12, setting the debugger's robust_loss to generalized_cross_entropy (was off)."
    )


# --------------------------------------------------------------------------- not remediable


def test_bad_data_ends_at_once_saying_to_correct_it(reference_state, record):
    failure = "AlgorithmError: IndexError: Target 12 is out of bounds."
    planned = plan(record(reference_state, outcome="data_error", failure_reason=failure))
    assert reason_of(planned) == (
        "Job remediation-resnet-1 failed on its data (AlgorithmError: IndexError: Target 12 is out of bounds.). The "
        "data is wrong (NaN inputs or targets, labels outside the model's classes); fix the data: no hyperparameter "
        "change can fix it, so no job is relaunched. Ending; correct the data and start a new run."
    )


@pytest.fixture
def script_state(account_input):
    return initial_state({**account_input, **SCRIPT})


def test_a_rise_after_a_raised_rate_names_the_rise_and_lowers_the_rate(account_input):
    run = recorded("mlp-adam-rate-raised-loss-rising")
    job = without_optimizer(run["jobs"][1])
    spec = {key: value for key, value in run["run_spec"].items() if key != "remedies"}
    spec = {**spec, "hyperparameters": job["hyperparameters"],
            "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"}}  # fmt: skip
    assert reason_of(plan(finish(start({**run, "run_spec": spec}, account_input), job))) == (
        "Job remediation-job-8fa34afe19-002 completed with quiet rules but validation:accuracy = 0.85 missed "
        "validation:accuracy >= 0.9 by 0.05. Remedy 7 of 21 for objective_missed in the evidence remedies, "
        "LowerRateOnDivergence (multiply lr by 0.1 (not below 0.0001)), applies because the loss rose to 6.507, "
        "2.85x its first step's 2.284, over steps 25-28, and ended at 3.752, still above where it started. The run "
        "diverged: a learning rate 10 times lower, well below the rate it diverged at (halving it diverges again). "
        "More epochs would not help. Rates judged in SGD's range (usual start 0.1, out of range above 0.4, too small "
        "below 0.001; assumed: the job reported no optimizer). Next: lowering lr 0.1 -> 0.01."
    )


def test_a_recurrent_networks_spike_is_named_with_its_numbers(account_input):
    run = recorded("gru-sgd-lr-2-gradient-spikes")
    assert reason_of(plan(finish(start(run, account_input), run["jobs"][0]))) == (
        "LossNotDecreasing fired at step 40: loss rose 615% from its lowest mean 1.75341 (over 20 loss(es)) to "
        "12.5394 over 20 (the 20 steps to step 39); allowed increase 5% plus the noise (2.64). Remedy 2 of 14 for "
        "LossNotDecreasing in the evidence remedies, LowerRateOnDivergence (set lr to 0.1), applies because the loss "
        "rose to 18.88, 13.7x its first step's 1.378, over steps 20-40, and ended at 15.44, still above where it "
        "started and the gradient norm spiked to 824.5, 3820x its first step's 0.2158, at step 33 and lr 2 is above "
        "0.4. The run diverged at a learning rate above the range SGD trains networks at: 0.1, its usual start, is "
        "below the rate it diverged at. More epochs would not help. Rates judged in SGD's range (usual start 0.1, "
        "out of range above 0.4, too small below 0.001; the optimizer the job reported). Evidence: initial gradient "
        "norm 0.2158, initial loss 1.378, last finite loss 24.18, max gradient norm 824.5, optimizer SGD at 2. Next: "
        "lowering lr 2 -> 0.1."
    )


def test_targets_far_from_the_outputs_scale_name_the_scale_and_the_fix(account_input):
    run = recorded("regression-targets-x1000")
    assert reason_of(plan(finish(start(run, account_input), run["jobs"][0]))) == (
        "ExplodingTensor fired at step 3: 1 NaN or infinite value(s) in MSELoss_output_0 at step 3. Remedy 1 of 6 "
        "for ExplodingTensor in the evidence remedies, RateForTargetScale (divide lr by the targets' measured "
        "scale), applies because the targets' scale (root mean square 837.7) is 837.7 times what the model's outputs "
        "start at (0.1186, counted as at least 1), above 30 and lr 0.01 is above 0.001. Under SGD the first steps "
        "grow with the targets' scale: the rate divided by that scale takes the steps the usual rate takes on "
        "standardised targets. Standardising the targets in the script is the fix that holds for any rate. Rates "
        "judged in SGD's range (usual start 0.1, out of range above 0.4, too small below 0.001; the optimizer the "
        "job reported). Evidence: initial gradient norm 1065, initial loss 7.017e+05, last finite loss 8.062e+11, "
        "max gradient norm 3.553e+10, optimizer SGD at 0.01. Next: lowering lr 0.01 -> 1.2e-05."
    )


def test_a_collapse_after_the_rate_was_put_on_the_targets_scale_lowers_it_within_that_scale(account_input):
    run = recorded("regression-targets-x1000")
    state = finish(plan(finish(start(run, account_input), run["jobs"][0])), run["jobs"][1])
    assert reason_of(plan(state)) == (
        "LossNotDecreasing fired at step 264: loss rose 63.8% from its lowest mean 159550 (over 20 loss(es)) to "
        "261292 over 20 (the 20 steps to step 259); allowed increase 5% plus the noise (9.11e+04). Remedy 3 of 16 "
        "for LossNotDecreasing in the evidence remedies, LowerRateAfterCollapse (multiply lr by 0.1 (not below "
        "1.2e-07)), applies because the gradient norm rose from 1065 to 3.788e+05 (356x) at step 255 (learning rate "
        "1.2e-05) before the rule fired at step 264, more than 10x its initial value. The network blew up and did not "
        "recover: a collapse from a learning rate too high, not gradients too small to learn. Rates judged in SGD's "
        "range, divided by the targets' scale 833.3 (usual start 0.00012, out of range above 0.00048, too small below "
        "1.2e-06; the optimizer the job reported). Evidence: initial gradient norm 1065, initial loss 7.017e+05, last "
        "finite loss 3.083e+05, max gradient norm 3.788e+05, optimizer SGD at 1.2e-05. Next: lowering lr 1.2e-05 -> "
        "1.2e-06."
    )


def test_spikes_clipped_when_the_rate_is_kept_say_so(account_input):
    run = recorded("regression-targets-x1000")
    first = plan(finish(start(run, account_input), run["jobs"][0]))
    state = finish(first.model_copy(update={"fixed_hyperparameters": ["lr"]}), run["jobs"][1])
    assert reason_of(plan(state)) == (
        "LossNotDecreasing fired at step 264: loss rose 63.8% from its lowest mean 159550 (over 20 loss(es)) to 261292 "
        "over 20 (the 20 steps to step 259); allowed increase 5% plus the noise (9.11e+04). Remedy 4 of 16 for "
        "LossNotDecreasing in the evidence remedies, ClipGradientsOnSpikes (set grad-clip to 2 times the total gradient"
        " norm's typical size before it spiked (3685 in job 2)), applies because the gradient norm spiked to 3.788e+05,"
        " 356x its first step's 1065, at step 255 and grad-clip is 0. Clipping the total gradient norm at 2 times the "
        "size it kept before the spikes (measured in the job) bounds the steps those spikes take and leaves the usual "
        "steps whole (a recurrent network's gradient spikes when its state dynamics turn unstable); the rate is kept. "
        "Evidence: initial gradient norm 1065, initial loss 7.017e+05, last finite loss 3.083e+05, max gradient norm "
        "3.788e+05, optimizer SGD at 1.2e-05. Not tried: LowerRateAfterCollapse would change lr, which "
        "fixed_hyperparameters keeps. Next: raising grad-clip 0 -> 7400."
    )
