"""The built-in remedy sets (``policy`` in the execution input), written in ``contracts.remedies``' declaration
form on conventional hyperparameter names.

* ``evidence`` (default): for every failure the debugger names, the remedies the evidence calls for, each stated
  with its numbers. On the reference scenario (DESIGN §1) a ResNet without batch norm explodes in its first steps
  with an initial gradient norm in the hundreds for every warmup rate from 0.8 down to 0.0125, so lowering the
  warmup rate only delays the explosion; batch norm with warmup <= 0.1 fixes it. That evidence adds batch norm at
  once.
* ``anchor`` reproduces the AWS sample's fixed ladder exactly (``plan_launch_spec`` of the monitor Lambda of the
  AWS blog post "Automating complex deep learning model training using Amazon SageMaker Debugger and AWS Step
  Functions"): halve ``warmup_learning_rate`` while ``warmup_learning_rate / 5 >= 1e-3``; else add batch norm if
  absent; else ``learning_rate * 0.9`` while that stays ``> 1e-3``; else end.

The names are the built-in example's and, for gradient-boosted trees, SageMaker's XGBoost container's
(:data:`CONVENTIONAL_HYPERPARAMETERS`; the XGBoost remedies are in ``lambdas.remediation.planning.remedies.xgboost``). A script of your own gets the same
remedies on its own names: the run's ``hyperparameter_names`` maps a conventional name to the script's (for
example ``{"learning_rate": "lr", "num_epochs": "epochs"}``; a script that already uses a conventional name needs
no entry), and remedies on hyperparameters the run does not have are left out
(``contracts.remedies.adapt_to_script``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.hyperparameter_values import FLAG, INTEGER, REAL, TEXT, infer_kinds
from contracts.remedies import ANY_RULE
from lambdas.remediation.planning.remedies.evidence import (  # noqa: F401 - the set's constants, importable from here
    EVIDENCE_REMEDIES,
    LEARNING_RATE_CEILING,
    LEARNING_RATE_FLOOR,
    STABLE_WARMUP_LEARNING_RATE,
    USUAL_LEARNING_RATE,
    evidence_remedies,
)
from lambdas.remediation.planning.remedies.xgboost import XGBOOST_HYPERPARAMETERS, XGBOOST_KINDS

#: The hyperparameters the built-in remedies change, by their conventional name (the built-in example's), and
#: what a script must mean by each for the remedies to make sense.
CONVENTIONAL_HYPERPARAMETERS: dict[str, str] = {
    "learning_rate": "the (main) learning rate",
    "warmup_learning_rate": "the learning rate of the warmup epochs",
    "add_batch_norm": "true/false: batch normalisation layers in the network",
    "activation": "the hidden activation's name (relu, leaky_relu, elu, tanh, sigmoid, ...)",
    "init_scale": "a factor on the initial weights' standard deviation (1: the usual He/Xavier scale)",
    "grad_clip": "clip the total gradient norm to this (0: no clipping)",
    "weight_decay": "L2 weight decay",
    "dropout": "dropout probability before the output layer (0: none)",
    "class_weighting": "'none' or 'balanced': weight the loss by inverse class frequency",
    "early_stopping_patience": "epochs without a better validation loss before stopping and keeping the best model "
    "(0: off)",
    "normalize_inputs": "true/false: scale the inputs to zero mean and unit variance",
    "num_workers": "data-loading worker processes (0: load in the training process)",
    "batch_size": "samples per step",
    "num_epochs": "epochs to train",
    # gradient-boosted trees (lambdas.remediation.planning.remedies.xgboost)
    **XGBOOST_HYPERPARAMETERS,
}

#: What each conventional hyperparameter is (``contracts.hyperparameter_values.KINDS``): a script's own name mapped to
#: one of them (``hyperparameter_names``) is that kind, however its JSON value is written ("lr": 50 is a real number,
#: "batch-norm": 0 a flag).
CONVENTIONAL_KINDS: dict[str, str] = {
    "learning_rate": REAL,
    "warmup_learning_rate": REAL,
    "add_batch_norm": FLAG,
    "activation": TEXT,
    "init_scale": REAL,
    "grad_clip": REAL,
    "weight_decay": REAL,
    "dropout": REAL,
    "class_weighting": TEXT,
    "early_stopping_patience": INTEGER,
    "normalize_inputs": FLAG,
    "num_workers": INTEGER,
    "batch_size": INTEGER,
    "num_epochs": INTEGER,
    **XGBOOST_KINDS,
}


def hyperparameter_kinds(
    hyperparameters: Mapping[str, Any], names: Mapping[str, str], declared: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Every hyperparameter's kind: as the run_spec declares it (``hyperparameter_kinds``), else as the conventional
    name it stands for (``names``: conventional -> the script's; a script using a conventional name itself needs
    none), else from its name and value (``contracts.hyperparameter_values.infer_kinds``)."""
    return infer_kinds(hyperparameters, declared, conventional_meanings(names))


def conventional_meanings(names: Mapping[str, str]) -> dict[str, str]:
    """The script's hyperparameter name -> the kind of the conventional one it stands for (``names``: conventional ->
    the script's; a conventional name no other name claims stands for itself)."""
    claimed = {own for conventional, own in names.items() if own != conventional}
    return {
        names.get(conventional, conventional): kind
        for conventional, kind in CONVENTIONAL_KINDS.items()
        if conventional in names or conventional not in claimed
    }


ANCHOR_REMEDIES: dict[str, list[dict[str, Any]]] = {
    ANY_RULE: [
        # warmup / 5 >= 1e-3 before halving  <=>  warmup * 0.5 >= 0.0025 after it
        {"name": "HalveWarmupLearningRate", "hyperparameter": "warmup_learning_rate", "multiply_by": 0.5, "min": 0.0025},
        {"name": "AddBatchNorm", "hyperparameter": "add_batch_norm", "set_to": True},
        {"name": "ScaleLearningRate", "hyperparameter": "learning_rate", "multiply_by": 0.9, "above": 0.001},
    ]
}

#: Named remedy sets (``policy`` in the execution input); "declared" means the run's own ``remedies``.
POLICY_REMEDIES: dict[str, dict[str, list[dict[str, Any]]]] = {"evidence": EVIDENCE_REMEDIES, "anchor": ANCHOR_REMEDIES}
