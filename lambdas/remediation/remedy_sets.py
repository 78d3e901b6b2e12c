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
(:data:`CONVENTIONAL_HYPERPARAMETERS`; the XGBoost remedies are in ``lambdas.remediation.xgboost_remedies``). A script of your own gets the same
remedies on its own names: the run's ``hyperparameter_names`` maps a conventional name to the script's (for
example ``{"learning_rate": "lr", "num_epochs": "epochs"}``; a script that already uses a conventional name needs
no entry), and remedies on hyperparameters the run does not have are left out
(``contracts.remedies.adapt_to_script``).
"""

from __future__ import annotations

from typing import Any

from contracts.remedies import ANY_RULE, OBJECTIVE_MISSED, OUT_OF_MEMORY
from lambdas.remediation.xgboost_remedies import XGBOOST_EVIDENCE_REMEDIES, XGBOOST_HYPERPARAMETERS

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
    # gradient-boosted trees (lambdas.remediation.xgboost_remedies)
    **XGBOOST_HYPERPARAMETERS,
}

#: An initial total gradient norm above this means the network is badly scaled at
#: initialisation (measured: 200-950 without batch norm, 7-8 with it).
INIT_SCALE_GRADIENT_NORM = 50.0
#: With batch norm, warmup rates above this exploded in the reference runs; at or below it, stable.
STABLE_WARMUP_LEARNING_RATE = 0.1
#: The evidence policy never lowers a learning rate below this ...
LEARNING_RATE_FLOOR = 1e-4
#: ... nor raises one above this.
LEARNING_RATE_CEILING = 0.4
#: ... nor trains for more epochs than this when the objective is missed.
MAX_EPOCHS = 16
#: ... nor halves the batch below this when a job runs out of memory.
MIN_BATCH_SIZE = 8
#: ... nor raises weight decay above this when a model overfits.
MAX_WEIGHT_DECAY = 1e-2
#: ... and starts it here when a model without it overfits (the usual SGD value).
MIN_WEIGHT_DECAY = 1e-4
#: Dropout the evidence policy adds against overfitting.
OVERFIT_DROPOUT = 0.3
#: Epochs without a better validation loss before early stopping keeps the best model.
EARLY_STOPPING_PATIENCE = 2
#: A DeadRelu value (percent of the layer's units dead, the unit of its threshold_layer) above this means most units
#: are gone: changing the activation, not the rate, brings them back.
MOSTLY_DEAD = 50.0
#: Where a learning rate far above the ceiling is brought back to: SGD's usual starting rate.
USUAL_LEARNING_RATE = 0.1

# --------------------------------------------------------------------------- the evidence set

_CAP_WARMUP = {"hyperparameter": "warmup_learning_rate", "at_most": STABLE_WARMUP_LEARNING_RATE}
_ADD_BATCH_NORM = {"hyperparameter": "add_batch_norm", "set_to": True, "also": [_CAP_WARMUP], "name": "AddBatchNorm"}
_LOWER_LEARNING_RATE = {
    "name": "LowerLearningRate",
    "hyperparameter": "learning_rate",
    "multiply_by": 0.5,
    "min": LEARNING_RATE_FLOOR,
}
_RAISE_LEARNING_RATE = {
    "name": "RaiseLearningRate",
    "hyperparameter": "learning_rate",
    "multiply_by": 2,
    "max": LEARNING_RATE_CEILING,
}
#: A rate above the ceiling is no tuning question: every failure it causes is answered by bringing it into range.
_RATE_INTO_RANGE = {
    "name": "LearningRateIntoRange",
    "hyperparameter": "learning_rate",
    "set_to": USUAL_LEARNING_RATE,
    "when": {"hyperparameters_above": {"learning_rate": LEARNING_RATE_CEILING}},
    "note": f"A learning rate above {LEARNING_RATE_CEILING:g} is outside the range SGD trains these networks at; "
    f"{USUAL_LEARNING_RATE:g} is the usual start.",
}
#: ... and a rate far below the floor's tenfold moves the weights too little to tell anything: up to the usual start.
_RATE_UP_INTO_RANGE = {
    "name": "LearningRateUpIntoRange",
    "hyperparameter": "learning_rate",
    "set_to": USUAL_LEARNING_RATE / 10,
    "resume": True,
    "when": {"hyperparameters_below": {"learning_rate": LEARNING_RATE_FLOOR * 10}},
    "note": f"A learning rate below {LEARNING_RATE_FLOOR * 10:g} barely moves the weights; "
    f"{USUAL_LEARNING_RATE / 10:g} is within SGD's usual range, continuing from where training got to.",
}
_LOWER_WARMUP = {
    "name": "LowerWarmupLearningRate",
    "hyperparameter": "warmup_learning_rate",
    "multiply_by": 0.5,
    "min": LEARNING_RATE_FLOOR,
}
_RAISE_WARMUP = {
    "name": "RaiseWarmupLearningRate",
    "hyperparameter": "warmup_learning_rate",
    "multiply_by": 2,
    "max": STABLE_WARMUP_LEARNING_RATE,
}
_CLIP_GRADIENTS = {"name": "ClipGradients", "hyperparameter": "grad_clip", "set_to": 1.0}
_RESCALE_INIT = {
    "name": "RescaleInitialisation",
    "hyperparameter": "init_scale",
    "set_to": 1.0,
    "note": "Initial weights at the usual He/Xavier scale keep activations and gradients of order one.",
}
_LEAKY_RELU = {
    "name": "SwitchToLeakyReLU",
    "hyperparameter": "activation",
    "set_to": "leaky_relu",
    "when": {"hyperparameters": {"activation": "relu"}},
    "note": "A ReLU unit whose input stays negative passes no gradient and never recovers; leaky ReLU keeps a small "
    "slope there.",
}
#: Weight decay from none (multiplying zero changes nothing) ...
_START_WEIGHT_DECAY = {"name": "StartWeightDecay", "hyperparameter": "weight_decay", "at_least": MIN_WEIGHT_DECAY}
#: ... and up from there.
_RAISE_WEIGHT_DECAY = {"name": "RaiseWeightDecay", "hyperparameter": "weight_decay", "multiply_by": 10,
                       "max": MAX_WEIGHT_DECAY}
_EARLY_STOPPING = {
    "name": "StopEarlyKeepBest",
    "hyperparameter": "early_stopping_patience",
    "set_to": EARLY_STOPPING_PATIENCE,
    "resume": True,
    "note": f"Stop after {EARLY_STOPPING_PATIENCE} epochs without a better validation loss and keep the best model; "
    "the next job continues from the checkpoints rather than training again from scratch.",
}

EVIDENCE_REMEDIES: dict[str, list[dict[str, Any]]] = {
    "ExplodingTensor": [
        _RATE_INTO_RANGE,
        {
            **_ADD_BATCH_NORM,
            "when": {"phase": "warmup", "early": True, "initial_gradient_norm_above": INIT_SCALE_GRADIENT_NORM},
            "note": "An initialisation-scale gradient norm with no batch norm means the network is badly scaled at "
            "initialisation, and blowing up in the first steps of warmup means a lower warmup rate would only delay "
            "the explosion.",
        },
        {**_ADD_BATCH_NORM, "note": "Without batch norm, lowering the learning rates only delays the blow-up."},
        {
            **_CAP_WARMUP,
            "name": "CapWarmupLearningRate",
            "when": {"phase": "warmup"},
            "note": f"With batch norm the reference network was stable at warmup <= {STABLE_WARMUP_LEARNING_RATE:g}.",
        },
        {**_LOWER_WARMUP, "when": {"phase": "warmup"}, "note": "The warmup rate is too high for this network."},
        {**_LOWER_LEARNING_RATE, "when": {"phase": "main"}, "note": "The main learning rate is too high."},
        {
            **_CLIP_GRADIENTS,
            "note": "Clipping the gradient norm bounds each step, so one large gradient cannot throw the weights off.",
        },
        {**_LOWER_LEARNING_RATE, "note": "A lower learning rate is the remaining remedy for an explosion."},
    ],
    "VanishingGradient": [
        _RATE_INTO_RANGE,
        _RATE_UP_INTO_RANGE,
        {**_ADD_BATCH_NORM, "also": [], "note": "Batch norm keeps the gradients scaled."},
        {**_LEAKY_RELU, "note": "ReLU units can die and stop passing gradient; leaky ReLU keeps one."},
        {
            "name": "SwitchToReLU",
            "hyperparameter": "activation",
            "set_to": "relu",
            "when": {"hyperparameters": {"activation": "sigmoid"}},
            "note": "Sigmoid's derivative is at most 0.25, so gradients shrink layer by layer; ReLU passes them whole.",
        },
        {**_RESCALE_INIT, "note": "Initial weights far below the usual scale shrink the gradients layer by layer."},
        {**_RAISE_WARMUP, "when": {"phase": "warmup"}, "note": "The warmup rate is too small to move the weights."},
        {**_RAISE_LEARNING_RATE, "note": "The updates are too small."},
    ],
    "DeadRelu": [
        _RATE_INTO_RANGE,
        {**_LEAKY_RELU, "when": {"hyperparameters": {"activation": "relu"}, "issue_value_above": MOSTLY_DEAD}},
        {**_LOWER_LEARNING_RATE, "note": "Large steps push ReLU units into the region where they stay off."},
        _LEAKY_RELU,
        {**_ADD_BATCH_NORM, "also": [], "note": "Batch norm keeps pre-activations centred, so units stay alive."},
    ],
    "SaturatedActivation": [
        _RATE_INTO_RANGE,
        {**_RESCALE_INIT, "note": "Large initial weights drive tanh/sigmoid inputs far from zero, where their "
         "derivative vanishes."},
        {**_ADD_BATCH_NORM, "also": [], "note": "Batch norm keeps the activations' inputs near zero."},
        {**_LOWER_LEARNING_RATE, "note": "Large steps push the activations' inputs into saturation."},
    ],
    "AllZero": [
        {**_RESCALE_INIT, "note": "Weights initialised to zero (init_scale 0) give every unit the same zero output "
         "and gradient: they never differ."},
        {**_RAISE_LEARNING_RATE, "note": "The tensors stay zero: nothing moves them."},
    ],
    "UnchangedTensor": [
        _RATE_UP_INTO_RANGE,
        {**_RAISE_LEARNING_RATE, "multiply_by": 10, "resume": True,
         "note": "The tensors do not change between steps: the updates are too small to move them."},
    ],
    "TensorVariance": [
        _RATE_INTO_RANGE,
        {**_RESCALE_INIT, "when": {"early": True}, "note": "Tensors whose spread is out of bounds from the first steps "
         "were initialised at the wrong scale."},
        {**_LOWER_LEARNING_RATE, "when": {"issue_kind": "above_max"},
         "note": "Tensors spreading beyond the bound mean the updates are too large."},
        {**_START_WEIGHT_DECAY, "when": {"issue_kind": "above_max"}, "resume": True,
         "note": "Weight decay pulls growing weights back."},
        {**_RAISE_WEIGHT_DECAY, "when": {"issue_kind": "above_max"}, "resume": True,
         "note": "Stronger weight decay pulls growing weights back."},
        {**_RAISE_LEARNING_RATE, "when": {"issue_kind": "below_min"}, "resume": True,
         "note": "Tensors that barely vary mean the updates are too small."},
    ],
    "ClassImbalance": [
        {"name": "WeightClasses", "hyperparameter": "class_weighting", "set_to": "balanced", "resume": True,
         "note": "Weighting the loss by inverse class frequency makes the rare classes count as much as the common "
         "ones."},
    ],
    "Overfit": [
        {**_EARLY_STOPPING, "note": "The validation loss rises while the training loss falls: the best model is "
         "behind, so stop at the best epoch and keep it, continuing from the checkpoints."},
        {**_START_WEIGHT_DECAY, "note": "The model memorises its training set: L2 regularisation, trained again from "
         "the start."},
        {**_RAISE_WEIGHT_DECAY, "note": "Stronger L2 regularisation narrows the gap, trained again from the start."},
        {"name": "AddDropout", "hyperparameter": "dropout", "set_to": OVERFIT_DROPOUT,
         "note": "Dropout regularises a model that memorises its training set, trained again from the start."},
    ],
    "Overtraining": [
        {**_EARLY_STOPPING, "note": "The validation loss stopped improving while training went on: stop at the best "
         "epoch and keep that model, continuing from the checkpoints."},
        {**_START_WEIGHT_DECAY, "note": "L2 regularisation delays overtraining."},
        {**_RAISE_WEIGHT_DECAY, "note": "Stronger L2 regularisation delays overtraining."},
    ],
    "LossNotDecreasing": [
        _RATE_INTO_RANGE,
        _RATE_UP_INTO_RANGE,
        {**_LOWER_WARMUP, "when": {"phase": "warmup", "loss": "rising"}, "note": "The loss oscillates or rises."},
        {**_RAISE_WARMUP, "when": {"phase": "warmup", "loss": "falling"}, "note": "The loss falls too slowly."},
        {**_LOWER_LEARNING_RATE, "when": {"loss": "rising"}, "note": "The loss rises: the learning rate overshoots."},
        {**_RAISE_LEARNING_RATE, "when": {"loss": "falling"}, "resume": True,
         "note": "The loss falls, too slowly to count: larger steps, from where training got to."},
        {**_LOWER_LEARNING_RATE, "note": "The loss stopped decreasing: the main rate overshoots."},
    ],
    "WeightUpdateRatio": [
        _RATE_INTO_RANGE,
        _RATE_UP_INTO_RANGE,
        {**_LOWER_LEARNING_RATE, "when": {"issue_kind": "too_large"},
         "note": "Updates large against the weights they change mean the learning rate is too high."},
        {**_RAISE_LEARNING_RATE, "when": {"issue_kind": "too_small"}, "resume": True,
         "note": "Updates tiny against the weights mean the learning rate is too low."},
        _LOWER_LEARNING_RATE,
    ],
    "PoorWeightInitialization": [
        _RATE_INTO_RANGE,
        {**_RESCALE_INIT, "note": "Activations of very different scale across layers mean the initial weights are "
         "badly scaled."},
        {**_ADD_BATCH_NORM, "also": [], "note": "Batch norm rescales every layer's activations."},
    ],
    "StalledTrainingRule": [
        {"name": "LoadInProcess", "hyperparameter": "num_workers", "set_to": 0, "resume": True,
         "note": "No step for the threshold's seconds: a data-loading worker that hangs (a deadlock after fork) stalls "
         "training; loading in the training process cannot."},
    ],
    "CheckInputImages": [
        {"name": "NormalizeInputs", "hyperparameter": "normalize_inputs", "set_to": True,
         "note": "Inputs far from zero mean and unit variance slow or destabilise training."},
    ],
    OUT_OF_MEMORY: [
        {
            "name": "HalveBatchSize",
            "hyperparameter": "batch_size",
            "multiply_by": 0.5,
            "min": MIN_BATCH_SIZE,
            # The linear scaling rule (Goyal et al. 2017): the learning rates follow the batch size.
            "also": [
                {"hyperparameter": "learning_rate", "multiply_by": 0.5, "min": LEARNING_RATE_FLOOR},
                {"hyperparameter": "warmup_learning_rate", "multiply_by": 0.5, "min": LEARNING_RATE_FLOOR},
            ],
            "note": "Activations grow with the batch: half the batch needs about half their memory, and the "
            "learning rates are halved with it (linear scaling rule).",
        }
    ],
    OBJECTIVE_MISSED: [
        # A completed job has no epochs left to continue: train again from the start at the usual rate.
        {**_RATE_UP_INTO_RANGE, "resume": False},
        {
            "name": "TrainLonger",
            "hyperparameter": "num_epochs",
            "multiply_by": 2,
            "max": MAX_EPOCHS,
            "resume": True,
            "note": "Training was stable but too short to reach the objective: more epochs, continuing from the "
            "last checkpoint.",
        }
    ],
    ANY_RULE: [_RATE_INTO_RANGE, _ADD_BATCH_NORM, _LOWER_LEARNING_RATE],
}

# The same rules' remedies for gradient-boosted trees, after the networks' (a run keeps those on its own names).
for _key, _entries in XGBOOST_EVIDENCE_REMEDIES.items():
    EVIDENCE_REMEDIES[_key] = [*EVIDENCE_REMEDIES.get(_key, []), *_entries]

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
