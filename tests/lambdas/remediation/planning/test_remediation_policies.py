import pytest

from contracts.hyperparameter_values import human_number
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import PlanningError, plan
from lambdas.remediation.planning.remedies.sets import ANCHOR_REMEDIES, EVIDENCE_REMEDIES, LEARNING_RATE_FLOOR
from lambdas.remediation.text.decision_text import evidence_numbers
from tests.lambdas.remediation.decision_fields import changes_of, ended, facts_of, skipped_with_jobs


def run_until_end(state, record, **issue):
    """Let every job hit the same issue, plan after each, and list the run_specs launched."""
    launched = []
    while state.next_action == "launch_new":
        launched.append(state.run_spec)
        state = plan(record(state, **issue))
    return state, launched


def ladder(run_specs):
    return [
        (spec.hyperparameters["warmup_learning_rate"], spec.hyperparameters["add_batch_norm"], spec.hyperparameters["learning_rate"])
        for spec in run_specs
    ]


def test_anchor_reproduces_the_samples_ladder_step_by_step(account_input, record):
    state = initial_state({**account_input, "policy": "anchor", "max_num_retraining": 50})
    state, launched = run_until_end(state, record)

    expected = [
        (0.1, False, 0.1),
        (0.05, False, 0.1),
        (0.025, False, 0.1),
        (0.0125, False, 0.1),
        (0.00625, False, 0.1),
        (0.003125, False, 0.1),  # 0.003125 / 5 < 1e-3: halving stops
        (0.003125, True, 0.1),  # then batch norm, once
    ]
    learning_rate = 0.1
    while learning_rate * 0.9 > 0.001:  # then x0.9 while it stays above 1e-3, exactly as the sample
        learning_rate = human_number(learning_rate * 0.9)  # written without float noise: 0.09, not 0.09000000000000001
        expected.append((0.003125, True, learning_rate))
    assert ladder(launched) == expected  # the sample's float operations, each result written as a person writes it
    assert len(launched) == 50  # 1 launch + 5 halvings + 1 batch norm + 43 learning-rate steps
    assert state.next_action == "end"
    decision = state.last_attempt.decision
    assert ended(decision) == ("none", "end", "no_remedy_left") and decision.cause == "ExplodingTensor"
    assert state.end_reason == decision.reason
    assert state.history.num_warmup_adjustments == 5
    assert state.history.num_batch_layer_adjustments == 1
    assert state.history.num_learning_rate_adjustments == 43
    assert state.history.num_retraining == 50  # every launch counts, the first included, as in the sample


def test_anchor_with_the_default_budget_reaches_batch_norm_at_the_seventh_launch(account_input, record):
    state = initial_state({**account_input, "policy": "anchor"})
    state, launched = run_until_end(state, record)
    assert ladder(launched)[-1] == (0.003125, True, 0.1)
    assert len(launched) == 7
    assert state.next_action == "end"
    assert state.history.num_retraining == 7  # the blog's reference run: 7 launches, num_retraining 7
    assert ended(state.last_attempt.decision) == ("none", "end", "budget_spent")  # its words: test_reasons.py
    decisions = [attempt.decision for attempt in state.attempts]
    assert [decision.remedy for decision in decisions] == ["HalveWarmupLearningRate"] * 5 + ["AddBatchNorm", "none"]
    assert {decision.cause for decision in decisions} == {"ExplodingTensor"}
    assert changes_of(decisions[0]) == {"warmup_learning_rate": (0.1, 0.05)}
    assert changes_of(decisions[5]) == {"add_batch_norm": (False, True)}


def test_anchor_matches_the_sample_at_the_boundaries(account_input, record):
    # warmup / 5 == 1e-3 still halves (>=); learning_rate * 0.9 == 1e-3 does not scale (>).
    at_boundary = initial_state({**account_input, "policy": "anchor", "init_warmup_learning_rate": 0.005})
    assert plan(record(at_boundary)).run_spec.hyperparameters["warmup_learning_rate"] == pytest.approx(0.0025)
    lr_boundary = initial_state(
        {
            **account_input,
            "policy": "anchor",
            "init_warmup_learning_rate": 0.001,
            "add_batch_norm": 1,
            "learning_rate": 0.001 / 0.9 * (1 + 1e-12),
        }
    )
    assert plan(record(lr_boundary)).next_action == "launch_new"
    lr_below = initial_state(
        {
            **account_input,
            "policy": "anchor",
            "init_warmup_learning_rate": 0.001,
            "add_batch_norm": 1,
            "learning_rate": 0.001 / 0.9 * (1 - 1e-12),
        }
    )
    assert plan(record(lr_below)).next_action == "end"


def test_evidence_policy_adds_batch_norm_at_once_on_the_reference_evidence(reference_state, record):
    planned = plan(record(reference_state))
    assert planned.next_action == "launch_new"
    assert planned.run_spec.hyperparameters["add_batch_norm"] is True
    assert planned.run_spec.hyperparameters["warmup_learning_rate"] == 0.1  # already at the stable warmup
    assert planned.run_spec.hyperparameters["learning_rate"] == 0.1
    decision = planned.last_attempt.decision
    assert decision.remedy == "AddBatchNorm"
    assert changes_of(decision) == {"add_batch_norm": (False, True)}  # the warmup is already at its cap, 0.1
    # in warmup, at step 2 (before step 10), an initial gradient norm of 512.3 above 50
    assert facts_of(decision) == {
        "phase": ("warmup", None), "early": (2, 10.0), "initial_gradient_norm_above": (512.3, 50.0)
    }  # fmt: skip
    assert planned.history.num_batch_layer_adjustments == 1
    assert planned.history.num_retraining == 1
    assert planned.history.num_warmup_adjustments == 0


@pytest.mark.parametrize(("gradient_norm", "loss", "step"), [(200.0, 15.0, 3), (950.0, 60.0, 2), (412.0, 33.0, 3)])
def test_evidence_policy_over_the_measured_range(
    reference_state, record, reference_evidence, gradient_norm, loss, step
):
    evidence = {
        **reference_evidence,
        "initial_gradient_norm": gradient_norm,
        "initial_loss": loss,
        "first_issue_step": step,
    }
    planned = plan(record(reference_state, step=step, evidence=evidence))
    assert planned.run_spec.hyperparameters["add_batch_norm"] is True
    assert facts_of(planned.last_attempt.decision) == {
        "phase": ("warmup", None), "early": (step, 10.0), "initial_gradient_norm_above": (gradient_norm, 50.0)
    }  # fmt: skip


def test_evidence_policy_caps_a_high_warmup_when_adding_batch_norm(account_input, record):
    state = initial_state({**account_input, "init_warmup_learning_rate": 0.8})
    planned = plan(record(state))
    assert (planned.run_spec.hyperparameters["add_batch_norm"], planned.run_spec.hyperparameters["warmup_learning_rate"]) == (True, 0.1)
    assert planned.history.num_batch_layer_adjustments == 1 and planned.history.num_warmup_adjustments == 1


def test_evidence_policy_reaches_the_fix_in_two_launches_where_the_anchor_needs_seven(account_input, record):
    """A job explodes unless batch norm is on with warmup <= 0.1 (the measured dynamics)."""

    def launch_until_clean(state):
        while state.next_action == "launch_new":
            spec = state.run_spec.hyperparameters
            stable = spec["add_batch_norm"] and spec["warmup_learning_rate"] <= 0.1
            state = plan(record(state, outcome="completed") if stable else record(state))
        return state

    evidence_run = launch_until_clean(initial_state(account_input))
    anchor_run = launch_until_clean(initial_state({**account_input, "policy": "anchor"}))
    assert evidence_run.last_attempt.outcome == "completed" and evidence_run.attempt_count == 2
    assert anchor_run.attempt_count == 7
    assert ended(evidence_run.last_attempt.decision) == ("none", "end", "completed")


def test_evidence_policy_with_batch_norm_exploding_in_warmup_lowers_the_warmup(
    account_input, record, reference_evidence
):
    state = initial_state({**account_input, "add_batch_norm": True, "init_warmup_learning_rate": 0.4})
    evidence = {**reference_evidence, "initial_gradient_norm": 7.5, "initial_loss": 3.5, "first_issue_step": 9}
    planned = plan(record(state, step=9, evidence=evidence))
    assert planned.run_spec.hyperparameters["warmup_learning_rate"] == 0.1  # straight down to the stable warmup
    planned = plan(record(planned, step=9, evidence=evidence))
    assert planned.run_spec.hyperparameters["warmup_learning_rate"] == 0.05  # then halves
    assert planned.last_attempt.decision.remedy == "LowerWarmupLearningRate"
    assert planned.history.num_warmup_adjustments == 2


def test_evidence_policy_exploding_in_the_main_phase_halves_the_learning_rate(
    account_input, record, reference_evidence
):
    state = initial_state({**account_input, "add_batch_norm": True})
    evidence = {**reference_evidence, "initial_gradient_norm": 7.5, "phase": "main", "first_issue_step": 23}
    planned = plan(record(state, step=23, phase="main", evidence=evidence))
    assert planned.run_spec.hyperparameters["learning_rate"] == 0.05
    assert planned.run_spec.hyperparameters["warmup_learning_rate"] == 0.1
    decision = planned.last_attempt.decision
    assert (decision.remedy, decision.cause) == ("LowerLearningRate", "ExplodingTensor")
    assert facts_of(decision) == {"phase": ("main", None)}
    assert changes_of(decision) == {"learning_rate": (0.1, 0.05)}


def test_without_evidence_the_evidence_policy_still_adds_batch_norm_first(reference_state, record):
    planned = plan(record(reference_state, step=None, phase=None, evidence={}))
    assert planned.run_spec.hyperparameters["add_batch_norm"] is True
    decision = planned.last_attempt.decision
    # the ladder's unconditional batch norm: no evidence held, none was read
    assert (decision.remedy, changes_of(decision), facts_of(decision)) == (
        "AddBatchNorm", {"add_batch_norm": (False, True)}, {}
    )  # fmt: skip
    assert evidence_numbers(planned.last_attempt) == "no numeric evidence"


def test_vanishing_gradient_remedies(account_input, record, reference_evidence):
    evidence = {**reference_evidence, "initial_gradient_norm": 1e-6, "phase": "main"}
    no_bn = plan(
        record(initial_state(account_input), rule="VanishingGradient", phase="main", step=30, evidence=evidence)
    )
    assert no_bn.last_attempt.decision.remedy == "AddBatchNorm"

    relu = initial_state({**account_input, "add_batch_norm": True, "hyperparameters": {"activation": "relu"}})
    switched = plan(record(relu, rule="VanishingGradient", phase="main", step=30, evidence=evidence))
    assert switched.run_spec.hyperparameters["activation"] == "leaky_relu"
    assert switched.history.num_hyperparameter_adjustments == {"activation": 1}

    elu = initial_state({**account_input, "add_batch_norm": True})
    raised = plan(record(elu, rule="VanishingGradient", phase="main", step=30, evidence=evidence))
    assert raised.run_spec.hyperparameters["learning_rate"] == 0.2
    raised = plan(record(raised, rule="VanishingGradient", phase="main", step=30, evidence=evidence))
    assert raised.run_spec.hyperparameters["learning_rate"] == 0.4
    capped = plan(record(raised, rule="VanishingGradient", phase="main", step=30, evidence=evidence))
    assert capped.next_action == "end"
    assert ended(capped.last_attempt.decision) == ("none", "end", "no_remedy_left")
    assert capped.last_attempt.decision.cause == "VanishingGradient"

    small_warmup = initial_state({**account_input, "add_batch_norm": True, "init_warmup_learning_rate": 0.01})
    warmup = plan(record(small_warmup, rule="VanishingGradient", phase="warmup", step=5, evidence=evidence))
    assert warmup.run_spec.hyperparameters["warmup_learning_rate"] == 0.02


def test_loss_not_decreasing_remedies(account_input, record, reference_evidence):
    bn = {**account_input, "add_batch_norm": True}
    rising = {**reference_evidence, "initial_loss": 2.3, "last_finite_loss": 2.9, "initial_gradient_norm": 7.5}
    lowered = plan(record(initial_state(bn), rule="LossNotDecreasing", step=12, evidence=rising))
    assert lowered.run_spec.hyperparameters["warmup_learning_rate"] == 0.05
    # in warmup, the loss went from 2.3 to 2.9: rising
    assert facts_of(lowered.last_attempt.decision) == {"phase": ("warmup", None), "loss": (2.9, 2.3)}

    stuck = {**reference_evidence, "initial_loss": 2.3, "last_finite_loss": 2.25, "initial_gradient_norm": 7.5}
    small = initial_state({**bn, "init_warmup_learning_rate": 0.003125})
    raised = plan(record(small, rule="LossNotDecreasing", step=12, evidence=stuck))
    assert raised.run_spec.hyperparameters["warmup_learning_rate"] == 0.00625
    assert raised.last_attempt.decision.remedy == "RaiseWarmupLearningRate"

    # in the main phase a slowly falling loss gets larger steps, continuing from the checkpoints ...
    main = {**stuck, "phase": "main"}
    raised = plan(record(initial_state(bn), rule="LossNotDecreasing", phase="main", step=30, evidence=main, kind="flat"))
    assert raised.run_spec.hyperparameters["learning_rate"] == 0.2
    assert raised.last_attempt.decision.resume_from == raised.last_attempt.job_name == "remediation-resnet-1"
    # ... and a rising one smaller steps, from scratch
    rising_main = {**rising, "phase": "main"}
    halved = plan(record(initial_state(bn), rule="LossNotDecreasing", phase="main", step=30, evidence=rising_main))
    assert halved.run_spec.hyperparameters["learning_rate"] == 0.05
    assert halved.last_attempt.decision.resume_from is None
    # ... and so does a loss the rule found rising from its lowest point, though it is below where it started: that
    # is no slow descent (larger steps there, then smaller ones, went round in circles: issue 21)
    risen = plan(record(initial_state(bn), rule="LossNotDecreasing", phase="main", step=30, evidence=main, kind="rising"))
    assert risen.run_spec.hyperparameters["learning_rate"] == 0.05
    assert facts_of(risen.last_attempt.decision) == {"issue_kind": ("rising", None)}


def test_learning_rate_is_never_lowered_below_the_floor(account_input, record, reference_evidence):
    state = initial_state(
        {
            **account_input,
            "add_batch_norm": True,
            "learning_rate": 0.00015,
            "max_num_retraining": 50,
            "hyperparameters": {"grad_clip": 1.0},  # clipping already on: lowering the rate is all that is left
        }
    )
    evidence = {**reference_evidence, "phase": "main", "initial_gradient_norm": 7.5}
    assert 0.00015 * 0.5 < LEARNING_RATE_FLOOR  # halving it once more would cross the floor
    planned = plan(record(state, phase="main", step=30, evidence=evidence))
    assert planned.next_action == "end"
    assert ended(planned.last_attempt.decision) == ("none", "end", "no_remedy_left")
    assert planned.run_spec.hyperparameters["learning_rate"] == 0.00015


def test_other_rules_use_the_generic_ladder(reference_state, record):
    planned = plan(record(reference_state, rule="PoorWeightInitialization"))
    assert planned.run_spec.hyperparameters["add_batch_norm"] is True


@pytest.mark.parametrize(
    ("outcome", "fields"),
    [
        ("completed", {"metrics": {"test:accuracy": 1.0}, "objective_value": 1.0}),
        ("algorithm_error", {"failure_reason": "AlgorithmError: ImportError"}),
        ("capacity_error", {"failure_reason": "CapacityError: no ml.m5.xlarge"}),
        ("stopped", {}),
        ("failed", {"failure_reason": "InternalServerError"}),
        ("monitor_limit", {}),
    ],
)
def test_outcomes_that_are_not_rule_issues_end_with_a_reason(reference_state, record, outcome, fields):
    """The run ends on the outcome itself, no remedy answering it (each reason's words: text/test_decision_text.py)."""
    planned = plan(record(reference_state, outcome=outcome, **fields))
    assert planned.next_action == "end"
    decision = planned.last_attempt.decision
    assert ended(decision) == ("none", "end", outcome) and decision.cause is None
    assert decision.changes == {} and decision.skipped == [] and decision.evidence == []
    assert planned.end_reason == decision.reason
    assert planned.history.num_retraining == 1  # the one launch
    assert planned.run_spec == reference_state.run_spec


def test_zero_budget_ends_after_the_first_job(account_input, record):
    state = initial_state({**account_input, "max_num_retraining": 0})
    planned = plan(record(state))
    assert planned.next_action == "end" and planned.history.num_retraining == 1
    assert ended(planned.last_attempt.decision) == ("none", "end", "budget_spent")  # its words: test_reasons.py
    assert planned.run_spec == state.run_spec


def test_plan_refuses_states_it_cannot_plan_from(reference_state):
    with pytest.raises(PlanningError, match="launch a job first"):
        plan(reference_state)
    with pytest.raises(PlanningError, match="still running"):
        plan(reference_state.with_new_attempt("remediation-resnet-1"))


def test_policies_cover_the_documented_rules():
    assert {"ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "objective_missed", "*"} <= set(
        EVIDENCE_REMEDIES
    )
    assert [remedy["name"] for remedy in ANCHOR_REMEDIES["*"]] == [
        "HalveWarmupLearningRate",
        "AddBatchNorm",
        "ScaleLearningRate",
    ]


def test_planned_state_survives_the_payload_round_trip(reference_state, record):
    from lambdas.remediation.state.payload import parse_state

    planned = plan(record(reference_state))
    assert parse_state(planned.to_payload()).to_payload() == planned.to_payload()


def test_settings_a_job_already_ran_are_not_launched_again(account_input, record, reference_evidence):
    """Lowered after a rise, then raised after a slow fall, would relaunch the first job's settings: the planner
    goes on to the next remedy and says why (issue 21's random zoo went 0.05 -> 0.1 -> 0.05 -> 0.1 -> 0.05)."""
    bn = {**account_input, "add_batch_norm": True}
    falling = {**reference_evidence, "initial_loss": 2.3, "last_finite_loss": 2.25, "phase": "main"}
    rising = {**falling, "last_finite_loss": 2.9}
    state = plan(record(initial_state(bn), rule="LossNotDecreasing", phase="main", step=30, evidence=rising, kind="rising"))
    assert state.run_spec.hyperparameters["learning_rate"] == 0.05
    state = plan(record(state, rule="LossNotDecreasing", phase="main", step=30, evidence=falling, kind="flat"))
    decision = state.last_attempt.decision
    assert decision.remedy != "RaiseLearningRate" and state.run_spec.hyperparameters["learning_rate"] != 0.1
    assert skipped_with_jobs(decision) == [("RaiseLearningRate", "repeats_a_job", 1)]
    assert (decision.remedy, changes_of(decision)) == ("LowerLearningRate", {"learning_rate": (0.05, 0.025)})
