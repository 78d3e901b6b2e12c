"""The hyperparameters the built-in remedy sets change, by their conventional names (the built-in example's, and for
gradient-boosted trees SageMaker's XGBoost container's), what a script must mean by each, and what each is. A script
of your own gets the same remedies on its own names: the run's ``hyperparameter_names`` maps a conventional name to
the script's (``{"learning_rate": "lr", "num_epochs": "epochs"}``). Standard library only."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contracts.hyperparameter_values import FLAG, INTEGER, REAL, TEXT, infer_kinds

#: The names these remedies change, and what a script must mean by each (SageMaker's XGBoost hyperparameters).
XGBOOST_HYPERPARAMETERS: dict[str, str] = {
    "max_depth": "XGBoost: the deepest a tree may grow",
    "eta": "XGBoost: the step size shrinking each new tree's weights (learning_rate)",
    "min_child_weight": "XGBoost: the least hessian weight a leaf may hold (0: leaves of one sample)",
    "subsample": "XGBoost: the fraction of the training rows each tree sees",
    "num_round": "XGBoost: boosting rounds",
    "early_stopping_rounds": "XGBoost: rounds without a better validation metric before stopping, keeping the best "
    "round's model (0: off)",
    "scale_pos_weight": "XGBoost: the weight of the positive class (1) against the negative one",
}

#: What each of them is (``contracts.hyperparameter_values.KINDS``).
XGBOOST_KINDS: dict[str, str] = {
    "max_depth": INTEGER,
    "eta": REAL,
    "min_child_weight": REAL,
    "subsample": REAL,
    "num_round": INTEGER,
    "early_stopping_rounds": INTEGER,
    "scale_pos_weight": REAL,
}

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
    "normalize_targets": "true/false: scale a regression's targets to zero mean and unit variance (its predictions "
    "scaled back)",
    "num_workers": "data-loading worker processes (0: load in the training process)",
    "batch_size": "samples per step",
    "num_epochs": "epochs to train",
    # gradient-boosted trees (SageMaker's XGBoost container)
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
    "normalize_targets": FLAG,
    "num_workers": INTEGER,
    "batch_size": INTEGER,
    "num_epochs": INTEGER,
    **XGBOOST_KINDS,
}


def hyperparameter_kinds(
    hyperparameters: Mapping[str, Any],
    names: Mapping[str, str],
    declared: Mapping[str, str] | None = None,
    spelled: Iterable[str] = (),
) -> dict[str, str]:
    """Every hyperparameter's kind: as the run_spec declares it (``hyperparameter_kinds``), else as the conventional
    name it stands for (``names``: conventional -> the script's; a script using a conventional name itself needs
    none), else from its name and value (``contracts.hyperparameter_values.infer_kinds``). ``spelled``: conventional
    names whose values the script spells its own way (a value map): their kind is the script's value's."""
    return infer_kinds(hyperparameters, declared, conventional_meanings(names, spelled))


def conventional_meanings(names: Mapping[str, str], spelled: Iterable[str] = ()) -> dict[str, str]:
    """The script's hyperparameter name -> the kind of the conventional one it stands for (``names``: conventional ->
    the script's; a conventional name no other name claims stands for itself; one in ``spelled`` has values of the
    script's own, so its kind is not the conventional one)."""
    claimed = {own for conventional, own in names.items() if own != conventional}
    spelled = set(spelled)
    return {
        names.get(conventional, conventional): kind
        for conventional, kind in CONVENTIONAL_KINDS.items()
        if (conventional in names or conventional not in claimed) and conventional not in spelled
    }
