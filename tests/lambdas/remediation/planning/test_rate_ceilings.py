"""A rate the run diverged or exploded at, or divided by its targets' scale, bounds every later rate remedy
(lambdas/remediation/planning/rate_ceilings.py, docs/decisions/187-rates-bounded-by-the-runs-history.md): no remedy of
the ladder raises a rate back to where the run's history showed it too high."""

from __future__ import annotations

from contracts.situation import RateCeiling
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.planning.situation import read_situation
from tests.lambdas.remediation.decision_fields import changes_of

#: What a job's debugger reports of a loss that rose and stayed up (contracts.divergence.Divergence.to_dict()).
ROSE = {"series": "loss", "kind": "rising", "early": 2.3, "level": 9.2, "from_step": 20, "peak_step": 39, "end": 6.1}


def main_phase(evidence: dict, **fields) -> dict:
    return {**evidence, "phase": "main", "initial_loss": 2.3, "initial_gradient_norm": 7.5, "last_finite_loss": 2.25,
            "optimizer": "SGD", **fields}  # fmt: skip


def test_a_rate_raised_after_a_divergence_stops_below_the_rate_it_diverged_at(account_input, record, reference_evidence):
    """SGD at 0.2 (inside SGD's range, whose ceiling is 0.4) diverged: a tenth of it; the loss then fell too slowly,
    and each job doubled the rate. 0.32 is inside SGD's range, but the run diverged at 0.2: that raise is not made."""
    state = initial_state({**account_input, "learning_rate": 0.2, "add_batch_norm": True, "max_num_retraining": 10})
    diverged = main_phase(reference_evidence, loss_divergence=ROSE)
    state = plan(record(state, rule="LossNotDecreasing", phase="main", step=40, evidence=diverged, kind="rising"))
    assert (state.last_attempt.decision.remedy, changes_of(state.last_attempt.decision)) == (
        "LowerRateOnDivergence", {"learning_rate": (0.2, 0.02)})
    slow = main_phase(reference_evidence)
    rates = []
    while state.next_action == "launch_new" and len(rates) < 6:
        rates.append(state.run_spec.hyperparameters["learning_rate"])
        state = plan(record(state, rule="LossNotDecreasing", phase="main", step=30, evidence=slow, kind="flat"))
    assert rates[:4] == [0.02, 0.04, 0.08, 0.16]
    assert max(rates) < 0.2
    assert all(changes_of(attempt.decision).get("learning_rate", (0, 0))[1] < 0.2 for attempt in state.attempts
               if attempt.decision is not None)  # fmt: skip


def test_the_ceiling_is_said_where_a_remedy_is_kept_below_it(account_input, record, reference_evidence):
    state = initial_state({**account_input, "learning_rate": 0.2, "add_batch_norm": True, "max_num_retraining": 10})
    diverged = main_phase(reference_evidence, loss_divergence=ROSE)
    state = plan(record(state, rule="LossNotDecreasing", phase="main", step=40, evidence=diverged, kind="rising"))
    for _ in range(4):  # 0.02 -> 0.04 -> 0.08 -> 0.16, and the job at 0.16 falls too slowly again
        state = plan(record(state, rule="LossNotDecreasing", phase="main", step=30, evidence=main_phase(reference_evidence),
                            kind="flat"))  # fmt: skip
    situation = read_situation(state)
    assert situation.evidence.ceiling_for("learning_rate") == RateCeiling(
        "learning_rate", 0.2, 1, "the rate job 1 diverged at")
    # nothing else is left in this ladder: the run ends, and its reason says why the raise was not made
    assert state.next_action == "end"
    assert "RaiseLearningRate: learning_rate 0.16 -> 0.32 would be at or above 0.2, the rate job 1 diverged at;" in (
        state.end_reason
    )


def test_a_rate_divided_by_the_targets_scale_is_not_raised_back(account_input, record, reference_evidence):
    """SGD at 0.03 on targets 837.7 times what the outputs start at (MSE): RateForTargetScale sets 3.6e-5. The next
    job's loss stalls: at 3.6e-5 the rate is "too small" for SGD's range, and LearningRateToUsual would set 0.1, more
    than the rate the scale was measured at. The scale's rate bounds the raises at 4 times it."""
    scaled = main_phase(reference_evidence, target_rms=837.7, output_rms=0.1186, target_loss="MSELoss",
                        initial_loss=7.0e5, initial_gradient_norm=1065.0, last_finite_loss=6.9e5)  # fmt: skip
    state = initial_state({**account_input, "learning_rate": 0.03, "max_num_retraining": 10})
    state = plan(record(state, rule="ExplodingTensor", phase="main", step=3, evidence=scaled))
    assert (state.last_attempt.decision.remedy, changes_of(state.last_attempt.decision)) == (
        "RateForTargetScale", {"learning_rate": (0.03, 3.6e-05)})
    stalled = {**scaled, "initial_loss": 7.0e5, "last_finite_loss": 6.99e5}
    state = plan(record(state, rule="LossNotDecreasing", phase="main", step=80, evidence=stalled, kind="stagnant"))
    decision = state.last_attempt.decision
    assert changes_of(decision).get("learning_rate", (0, 0))[1] < 1.44e-4, decision.reason
    ceiling = read_situation(state).evidence.ceiling_for("learning_rate")
    assert (ceiling.value, ceiling.job) == (1.44e-4, 1)
    assert ceiling.describe() == (
        "at or above 0.000144, 4 times the rate 3.6e-05 that job 1's targets' scale implies (its rate 0.03 divided by "
        "that scale)"
    )
