"""The ``evidence`` policy's remedies for gradient-boosted trees, on XGBoost's own hyperparameter names
(``max_depth``, ``eta``, ``min_child_weight``, ``subsample``, ``num_round``, ``early_stopping_rounds``,
``scale_pos_weight``: SageMaker's XGBoost container's names, so a script that uses them needs no
``hyperparameter_names``). ``lambdas.remediation.planning.remedies.sets`` appends them to the same rules' lists of the one
evidence set; a PyTorch script has none of these names, an XGBoost script none of the networks', so each run keeps
only its own (``contracts.remedies.adapt_to_script``).

The first remedy brings depth, rate and child weight into XGBoost's usual range together, and none resumes from the
stopped job's checkpoints (a booster can only add trees): docs/decisions/023-xgboost-trees-into-range-together.md.
"""

from __future__ import annotations

from typing import Any

from contracts.remedies import OBJECTIVE_MISSED

#: XGBoost's defaults: eta 0.3, max_depth 6, min_child_weight 1. Above (below) them each tree fits more of the
#: training set's noise.
USUAL_ETA = 0.3
USUAL_MAX_DEPTH = 6
USUAL_MIN_CHILD_WEIGHT = 1
#: Rounds without a better validation metric before early stopping: below Overtraining's patience_validation (10),
#: or the rule stops the job before early stopping keeps the best round.
EARLY_STOPPING_ROUNDS = 5
MIN_ETA = 0.01
MAX_ROUNDS = 2000
MIN_DEPTH = 2
MAX_MIN_CHILD_WEIGHT = 10
SUBSAMPLE = 0.8
#: An eta below this barely moves the model in a run's rounds.
TINY_ETA = 0.01

_EARLY_STOPPING = {"hyperparameter": "early_stopping_rounds", "set_to": EARLY_STOPPING_ROUNDS}
_MORE_ROUNDS = {"hyperparameter": "num_round", "multiply_by": 2, "max": MAX_ROUNDS}

_TREES_INTO_RANGE = {
    "name": "GentlerTrees",
    "hyperparameter": "eta",
    "at_most": USUAL_ETA,
    "when": {"hyperparameters_above": {"eta": USUAL_ETA}},
    "also": [
        {"hyperparameter": "max_depth", "at_most": USUAL_MAX_DEPTH},
        {"hyperparameter": "min_child_weight", "at_least": USUAL_MIN_CHILD_WEIGHT},
        _EARLY_STOPPING,
        _MORE_ROUNDS,
    ],
    "note": f"Each tree takes a large step on the training set's noise: eta back to XGBoost's default {USUAL_ETA:g}, "
    f"trees no deeper than {USUAL_MAX_DEPTH} with leaves of weight {USUAL_MIN_CHILD_WEIGHT} or more, more rounds for "
    f"the smaller steps, and early stopping after {EARLY_STOPPING_ROUNDS} rounds keeping the best one.",
}
_SHALLOWER_TREES = {
    "name": "ShallowerTrees",
    "hyperparameter": "max_depth",
    "at_most": USUAL_MAX_DEPTH,
    "when": {"hyperparameters_above": {"max_depth": USUAL_MAX_DEPTH}},
    "also": [{"hyperparameter": "min_child_weight", "at_least": USUAL_MIN_CHILD_WEIGHT}, _EARLY_STOPPING],
    "note": "Deep trees memorise the training set: no deeper than XGBoost's default, early stopping keeping the best "
    "round.",
}
_STOP_EARLY = {
    **_EARLY_STOPPING,
    "name": "StopEarlyKeepBest",
    "note": f"Stop after {EARLY_STOPPING_ROUNDS} rounds without a better validation metric and keep the best round's "
    "model (sooner than the rule's patience, so boosting ends at its best instead of being stopped).",
}
_SMALLER_STEPS = {
    "name": "SmallerSteps",
    "hyperparameter": "eta",
    "multiply_by": 0.5,
    "min": MIN_ETA,
    "also": [_MORE_ROUNDS],
    "note": "Smaller steps per tree, with more rounds to take them.",
}
_HEAVIER_LEAVES = {
    "name": "RaiseMinChildWeight",
    "hyperparameter": "min_child_weight",
    "add": 2,
    "max": MAX_MIN_CHILD_WEIGHT,
    "note": "A leaf must hold more weight: splits on a few samples stop.",
}
_SUBSAMPLE = {
    "name": "Subsample",
    "hyperparameter": "subsample",
    "at_most": SUBSAMPLE,
    "note": f"Each tree sees {SUBSAMPLE:.0%} of the rows, so no tree can fit all of the training set's noise.",
}
_SHALLOWER_STILL = {
    "name": "ShallowerTrees",
    "hyperparameter": "max_depth",
    "multiply_by": 0.5,
    "min": MIN_DEPTH,
    "note": "Half as deep trees fit less noise.",
}
_OVERFITTING = [_TREES_INTO_RANGE, _SHALLOWER_TREES, _STOP_EARLY, _SMALLER_STEPS, _HEAVIER_LEAVES, _SUBSAMPLE, _SHALLOWER_STILL]

#: scale_pos_weight near the measured imbalance (largest class / smallest); XGBoost's guide: sum(negative) /
#: sum(positive). The bands keep the remedy in the declared language (a constant per band).
_IMBALANCE_BANDS = (100, 30, 10)


def _balance(weight: int, above: float | None) -> dict[str, Any]:
    when: dict[str, Any] = {"issue_kind": "imbalance"}
    if above is not None:
        when["issue_value_above"] = above
    return {
        "name": "ScalePositiveWeight",
        "hyperparameter": "scale_pos_weight",
        "at_least": float(weight),
        "when": when,
        "note": "Weighing the positive class (label 1) up by about the imbalance makes both classes count alike in "
        "each split; it assumes class 1 is the rare one (XGBoost's scale_pos_weight weighs only it).",
    }


XGBOOST_EVIDENCE_REMEDIES: dict[str, list[dict[str, Any]]] = {
    "Overtraining": _OVERFITTING,
    "Overfit": _OVERFITTING,
    "LossNotDecreasing": [
        {
            "name": "EtaUpIntoRange",
            "hyperparameter": "eta",
            "set_to": 0.1,
            "resume": True,
            "when": {"hyperparameters_below": {"eta": TINY_ETA}},
            "note": f"An eta below {TINY_ETA:g} barely moves the model; 0.1, boosting on from the last checkpoint.",
        },
        *_OVERFITTING,
    ],
    "ClassImbalance": [
        *(_balance(band, band) for band in _IMBALANCE_BANDS[:-1]),
        _balance(_IMBALANCE_BANDS[-1], None),
        {
            "name": "ScalePositiveWeight",
            "hyperparameter": "scale_pos_weight",
            "multiply_by": 2,
            "max": 1000,
            "when": {"issue_kind": "misprediction"},
            "note": "Most of a class's samples are predicted as the other: weigh the positive class (label 1) more.",
        },
    ],
    OBJECTIVE_MISSED: [
        _TREES_INTO_RANGE,
        _SHALLOWER_TREES,
        {
            **_MORE_ROUNDS,
            "name": "BoostLonger",
            "resume": True,
            "when": {"hyperparameters": {"early_stopping_rounds": 0}},
            "note": "The validation metric was still improving when the rounds ran out: more rounds, boosting on from "
            "the last checkpoint.",
        },
        _SMALLER_STEPS,
        _HEAVIER_LEAVES,
        _SUBSAMPLE,
    ],
}
