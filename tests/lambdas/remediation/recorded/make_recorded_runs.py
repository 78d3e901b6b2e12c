"""Record real jobs for the planner's tests: each scenario runs the local remediation loop (real training, the real
debugger) and keeps, per job, what the monitor read: the rule-status document the job's debugger wrote and the
job's description (status, failure reason, final metrics, from the run's final payload). A few KB per job.

    .venv/bin/python tests/lambdas/remediation/recorded/make_recorded_runs.py              # every scenario
    .venv/bin/python tests/lambdas/remediation/recorded/make_recorded_runs.py xgboost-overtraining

The tests (``tests/lambdas/remediation/planning/test_recorded_runs.py``, ``test_recorded_label_runs.py``,
``test_recorded_held_out_runs.py``, through ``recorded_runs.py``) feed these documents through the monitor's own
``decide``/``apply_decision`` and plan from them: the planner is judged on real trajectories, not hand-made numbers.
Rerun a scenario after changing what the job reports (``contracts.rule_status.Evidence``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
sys.path.insert(0, str(REPO / "examples" / "mlp"))
sys.path.insert(0, str(REPO / "bench"))  # the random zoo's faults, made the same way

#: The MLP example's knobs the evidence set turns, on its own names.
MLP_NAMES = {
    "learning_rate": "lr",
    "num_epochs": "epochs",
    "add_batch_norm": "batch-norm",
    "init_scale": "init-scale",
}
MLP_SPEC = {
    "source_dir": str(REPO / "examples" / "mlp"),
    "entry_point": "train.py",
    "metric_definitions": [{"Name": "validation:accuracy", "Regex": "val_accuracy=([0-9.]+)"}],
    "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
}

#: The random zoo's plain MLP regressor (bench/zoo_scripts/tabular_regression.py) as its user writes the run_spec.
REGRESSION_HYPERPARAMETERS = {"lr": 0.002, "optimizer": "adam", "loss": "mse", "epochs": 20, "batch-size": 32,
                              "hidden": 64, "layers": 2, "activation": "relu", "weight-decay": 0.0, "grad-clip": 0.0,
                              "seed": 0}
REGRESSION_SPEC = {
    "source_dir": str(REPO / "bench" / "zoo_scripts"),
    "entry_point": "tabular_regression.py",
    "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size",
                             "weight_decay": "weight-decay", "grad_clip": "grad-clip"},
    "metric_definitions": [{"Name": "validation:rmse", "Regex": r"validation:rmse ([0-9.eE+-]+|nan)"}],
    "objective": {"metric_name": "validation:rmse", "type": "Minimize", "target_value": 0.4},
}


def zoo_configuration(seed: int, index: int):
    """A configuration of the random repair zoo (bench/zoo_random.py; development seeds only)."""
    import zoo_random

    return zoo_random.draw(seed, index + 1)[index]


#: A plain logline script of the random zoo that learns noisy labels (see its scenario).
ZOO_NOISY_LABELS = zoo_configuration(24, 28).execution_input()


def zoo_scenario(seed: int, index: int, max_num_retraining: int, about: str) -> dict[str, Any]:
    """A scenario that runs the random zoo's configuration ``index`` of development seed ``seed`` as drawn."""
    return {
        "about": about,
        "zoo_configuration": (seed, index),
        "run_spec": {**zoo_configuration(seed, index).execution_input(), "max_num_retraining": max_num_retraining},
    }

SCENARIOS: dict[str, dict[str, Any]] = {
    "resnet-batch-norm-warmup-0.8": {
        "about": "The built-in ELU ResNet-20 with batch norm and warmup 0.8: the loss and gradient norm spike in the "
        "first warmup steps until a gradient is NaN (ExplodingTensor); the next job, at warmup 0.1, trains.",
        "run_spec": {"init_warmup_learning_rate": 0.8, "learning_rate": 0.1, "add_batch_norm": 1, "num_epochs": 2,
                     "max_num_retraining": 2},
    },
    "resnet-batch-norm-warmup-0.2": {
        "about": "The built-in ELU ResNet-20 with batch norm and warmup 0.2 (issue 21's collapse; one training "
        "thread): the loss spikes to 1e14 at the last warmup step and, at the first main step, the stem's gradient "
        "is exactly 0 (VanishingGradient). The next job runs at the warmup rate the planner chose.",
        "run_spec": {"init_warmup_learning_rate": 0.2, "learning_rate": 0.1, "add_batch_norm": 1, "num_epochs": 2,
                     "max_num_retraining": 2},
    },
    "mlp-dead-relu-lr-0.4": {
        "about": "The repair zoo's mlp-dead-relu: three ReLU layers at SGD 0.4 with momentum on clusters; DeadRelu "
        "fires.",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.4, "epochs": 4, "depth": 3, "activation": "relu"},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "rules": ["ExplodingTensor", "DeadRelu"], "max_num_retraining": 1},
    },
    "mlp-adam-1e-3-one-epoch": {
        "about": "The MLP on digits with Adam at 1e-3, its usual rate, for one epoch: healthy, short of the objective.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"optimizer": "adam", "lr": 0.001, "epochs": 1},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.97}, "max_num_retraining": 1},
    },
    "mlp-adam-5e-4-one-epoch": {
        "about": "The MLP on digits with Adam at 5e-4 for one epoch: healthy, short of the objective.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"optimizer": "adam", "lr": 0.0005, "epochs": 1},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.95}, "max_num_retraining": 1},
    },
    "mlp-lr-50-as-integer": {
        "about": 'The MLP on clusters at "lr": 50 (a JSON integer) with a declared remedy lr x 0.1: it explodes; '
        "the next job runs at 5.0.",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 50, "epochs": 2},
                     "remedies": {"ExplodingTensor": [{"hyperparameter": "lr", "multiply_by": 0.1, "min": 0.0001}]},
                     "max_num_retraining": 2},
    },
    "mlp-sigmoid-batch-norm-0": {
        "about": 'Eight sigmoid layers at a tenth of the usual initial scale on digits, "batch-norm": 0 (a 0/1 knob): '
        "VanishingGradient at step 0; the next job runs with what the planner chose.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 4, "activation": "sigmoid", "depth": 8,
                                                     "init-scale": 0.1, "batch-norm": 0},
                     "hyperparameter_names": MLP_NAMES, "max_num_retraining": 2},
    },
    "mlp-sigmoid-stack-quiet": {
        "about": "Four sigmoid layers on digits at SGD 0.05 (issue 21's quiet miss): no default rule fires and the "
        "loss stays flat for four epochs; the next job runs with the activation the planner chose.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 4, "activation": "sigmoid", "depth": 4,
                                                     "batch-norm": 0, "init-scale": 1.0},
                     "hyperparameter_names": MLP_NAMES, "max_num_retraining": 1},
    },
    "mlp-tanh-init-x100": {
        "about": "Four tanh layers of 32 units on digits at SGD 0.05, batch 32, initial weights at 100 times their usual "
        "scale: the units saturate and the loss spikes; the next job runs with what the planner chose.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 4, "activation": "tanh", "depth": 4,
                                                     "hidden": 32, "batch-size": 32, "batch-norm": 0,
                                                     "init-scale": 100.0},
                     "hyperparameter_names": MLP_NAMES, "max_num_retraining": 2},
    },
    "mlp-adam-frozen": {
        "about": "The MLP on digits with Adam at 2e-8 (frozen updates): quiet and flat for two epochs; the next job "
        "runs at the rate the planner chose.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"optimizer": "adam", "lr": 2e-8, "epochs": 2},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"}, "max_num_retraining": 1},
    },
    "mlp-sgd-frozen-stagnant": {
        "about": "The MLP on digits with SGD at 5e-7 for 12 epochs (frozen updates, the random zoo's x1e-5): the loss "
        "never leaves its first window's noise and LossNotDecreasing reports it stagnant a third of the way in; the "
        "next job runs at the rate the planner chose.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 5e-7, "epochs": 12},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"}, "max_num_retraining": 2},
    },
    "mlp-sgd-one-epoch-still-falling": {
        "about": "The MLP on digits with SGD at 0.01 for one epoch: healthy and still learning when it stops, short "
        "of the objective.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.01, "epochs": 1},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"}, "max_num_retraining": 1},
    },
    "mlp-adam-one-epoch-settled": {
        "about": "Three hidden layers on digits with Adam at 0.002, batch 16, for one epoch against an objective of "
        "0.97: healthy, its loss reads as settled over the epoch's 90 steps, short of the objective; the next job "
        "runs with what the planner chose.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"optimizer": "adam", "lr": 0.002, "epochs": 1, "batch-size": 16,
                                                     "depth": 3},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.97}, "max_num_retraining": 2},
    },
    "mlp-settled-short": {
        "about": "The MLP on digits with SGD at 0.05 for twelve epochs against an objective of 0.995: it learns, "
        "settles, and misses.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.995}, "max_num_retraining": 1},
    },
    "mlp-rare-class": {
        "about": "The MLP on digits with SGD at 0.05 for twelve epochs, class 0 kept at 2% of its training samples "
        "(the held-out channel keeps all its classes): quiet, and short of the objective; the script has a "
        "class-weighting knob, and the next job runs with what the planner chose.",
        "dataset": "digits",
        "train_faults": {"rare_class": 0.02},
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12, "class-weighting": "none"},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs",
                                              "class_weighting": "class-weighting"},
                     "max_num_retraining": 2},
    },
    "mlp-rare-class-weighted-in-job": {
        "about": "The same MLP and data as mlp-rare-class, run as a script without a class-weighting knob of its own "
        "is run: the planner has the next job's debugger weight its training loss by class.",
        "dataset": "digits",
        "train_faults": {"rare_class": 0.02},
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "max_num_retraining": 2},
    },
    "mlp-noisy-labels": {
        "about": "The MLP on digits with SGD at 0.05 for twelve epochs, 60% of its training labels replaced by labels "
        "drawn at random (held-out labels clean): quiet, and short of the objective; the network learns the wrong "
        "labels by heart. The script's weight decay and dropout are knobs; the next jobs run with what the planner "
        "chose.",
        "dataset": "digits",
        "train_faults": {"label_noise": 0.6},
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12, "weight-decay": 0.0, "dropout": 0.0},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs",
                                              "weight_decay": "weight-decay"},
                     "max_num_retraining": 4},
    },
    "mlp-dropout-clean-labels": {
        "about": "Two hidden layers of 16 units on digits with dropout 0.5 before the output layer, SGD at 0.05 for "
        "twelve epochs, clean labels, against an objective of 0.97: quiet, and short of it. In train mode the dropout "
        "lowers how often the model's top class matches its training labels far below its held-out accuracy, as "
        "wrong labels would.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12, "hidden": 16, "depth": 2, "dropout": 0.5},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.97}, "max_num_retraining": 1},
    },
    "mlp-augmented-clean-labels": {
        "about": "Two hidden layers of 64 units on digits, SGD at 0.05 for twelve epochs, clean labels, Gaussian "
        "noise of 1.5 added to each training input at every step (the script's own augmentation), against an "
        "objective of 0.97: quiet, and short of it. Its harder training inputs lower how often the model's top class "
        "matches its training labels far below its held-out accuracy, as wrong labels would.",
        "dataset": "digits",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12, "hidden": 64, "depth": 2,
                                                      "augment-noise": 1.5},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.97}, "max_num_retraining": 1},
    },
    "mlp-noisy-labels-small": {
        "about": "One hidden layer of 32 units on digits with SGD at 0.05 for twelve epochs, 60% of its training labels "
        "replaced by labels drawn at random (held-out labels clean): too small to learn the wrong labels by heart, "
        "it learns what the correct ones share; quiet, and short of the objective. The next jobs run with what the planner "
        "chose.",
        "dataset": "digits",
        "train_faults": {"label_noise": 0.6},
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12, "hidden": 32, "depth": 1},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "max_num_retraining": 3},
    },
    "mlp-noisy-labels-robust-in-job": {
        "about": "The MLP and data of mlp-noisy-labels-small (one hidden layer of 32 units on digits, SGD at 0.05 for "
        "twelve epochs, 60% of its training labels drawn at random), with the run_spec's debugger_robust_loss left "
        "to the product: the planner has the next job's debugger train it on the generalized cross-entropy.",
        "dataset": "digits",
        "train_faults": {"label_noise": 0.6},
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12, "hidden": 32, "depth": 1},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "max_num_retraining": 3},
    },
    "mlp-noisy-labels-past-best": {
        "about": "The MLP on digits with SGD at 0.05 for twelve epochs, 60% of its training labels replaced by labels "
        "drawn at random (held-out labels clean), against an objective of 0.75: its held-out accuracy, saved once per "
        "epoch, rises past the objective and falls below it again as the network learns the wrong labels (0.8 after "
        "epoch 2, 0.52 after 12); quiet, and short of the objective at the end. The next job runs with what the "
        "planner chose.",
        "dataset": "digits",
        "train_faults": {"label_noise": 0.6},
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.75}, "max_num_retraining": 2},
    },
    "plain-noisy-labels-past-best": {
        "about": "examples/plain (no debugger line: it only prints `epoch=3 ... val_accuracy=0.9375`, read with the "
        "run_spec's metric_definitions) on digits for twelve epochs, 60% of its training labels replaced by labels "
        "drawn at random (held-out labels clean), against an objective of 0.75: the job's debugger reads the printed "
        "accuracy as the script prints it, so the planner sees it rise past the objective and fall below it again.",
        "dataset": "digits",
        "train_faults": {"label_noise": 0.6},
        "run_spec": {"source_dir": str(REPO / "examples" / "plain"), "entry_point": "train.py",
                     "hyperparameters": {"lr": 0.05, "epochs": 12},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "metric_definitions": [{"Name": "validation:accuracy", "Regex": "val_accuracy=([0-9.]+)"}],
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.75}, "max_num_retraining": 2},
    },
    "logline-noisy-labels-falling-held-out": {
        "about": "The random zoo's plain logline script (bench/zoo_scripts/tabular_logline.py: no debugger line, it "
        "prints `epoch=3 loss=... val_acc=0.91`) as development seed 24 drew it, configuration 28: a 3x128 ReLU MLP "
        "on digits, 40% of its training labels drawn at random, SGD at a third of its 0.05 (the rate the planner "
        "had chosen there), twelve epochs, objective 0.9. Quiet; its held-out accuracy is best after epoch 6 and "
        "falls while the training loss still falls (the zoo's planner trained it 4 times longer, to 0.797).",
        "zoo_configuration": (24, 28),
        "run_spec": {**ZOO_NOISY_LABELS, "max_num_retraining": 1,
                     "hyperparameters": {**ZOO_NOISY_LABELS["hyperparameters"], "learning-rate": 0.015}},
    },
    "logline-noisy-labels-past-peak-robust-loss": {
        "about": "The job of logline-noisy-labels-falling-held-out (development seed 24, configuration 28: the plain "
        "logline script, 40% of its labels drawn at random, its held-out accuracy best after epoch 6 and falling) "
        "and the next job the planner launches: on the debugger's robust loss, the last remedy left.",
        "zoo_configuration": (24, 28),
        "run_spec": {**ZOO_NOISY_LABELS, "max_num_retraining": 2,
                     "hyperparameters": {**ZOO_NOISY_LABELS["hyperparameters"], "learning-rate": 0.015}},
    },
    "logline-noisy-labels-still-rising": zoo_scenario(
        40, 2, 3,
        "The plain logline script of the random zoo (development seed 40, configuration 2: one hidden layer of "
        "32 ReLU units with batch norm, Adam at 0.002 for twelve epochs on the generated tabular data, 40% of its "
        "training labels drawn at random): its held-out accuracy is still at its best at the last epoch. The planner "
        "has the next job's debugger train it on the robust loss, still best at its last epoch, then trains it longer.",
    ),
    "text-noisy-labels-found-by-a-later-job": zoo_scenario(
        200, 31, 3,
        "The random zoo's text script (development seed 200, configuration 31: one hidden layer of 128 ReLU units, "
        "SGD at 0.05 for twelve epochs on digits, 60% of its training labels drawn at random): the first job misses "
        "while its loss still falls and its labels say nothing yet; four times the epochs learns them by heart and "
        "scores lower; the next job goes back to the first job's settings on the debugger's robust loss.",
    ),
    "mlp-noisy-labels-held-out-loss-rising": zoo_scenario(
        305, 35, 3,
        "The random zoo's smdebug MLP script (development seed 305, configuration 35: two hidden layers of 128 ELU "
        "units with layer norm, Adam at 0.002 for twelve epochs on the tabular data, 60% of its training labels drawn "
        "at random): the robust loss's job still rises at its end, and four times the epochs overfits: "
        "LossNotDecreasing finds the held-out loss rising while the training loss falls.",
    ),
    "mlp-one-epoch-at-chance": zoo_scenario(
        262, 18, 5,
        "The random zoo's smdebug MLP script (development seed 262, configuration 18: four hidden layers of 32 GELU "
        "units, SGD at 0.05, batch 128, on the tabular data) trained 1 epoch of its 12: at chance, its loss flat. Four "
        "times the epochs is still at chance, a point lower within its reports' noise; the planner goes on from it.",
    ),
    "logline-noisy-labels-short-match": zoo_scenario(
        341, 35, 5,
        "The plain logline script of the random zoo (development seed 341, configuration 35: two hidden layers of 64 "
        "tanh units, Adam at 0.002 for twelve epochs on the tabular data, 40% of its training labels drawn at "
        "random): the model matches its training labels 8.5 points less often than it scores held out, under the 15 "
        "that name them noisy. A lower rate and twice the epochs do not help; the last remedy left is the debugger's "
        "robust loss.",
    ),
    "logline-raw-inputs-out-of-reach": zoo_scenario(
        40, 1, 2,
        "The plain logline script of the random zoo (development seed 40, configuration 1) on the generated "
        "tabular data in its raw units (scale-inputs 0): its held-out accuracy stalls near 0.56 against an objective "
        "of 0.8, and ObjectiveOutOfReach stops the job after 5 of its 12 epochs; the next job runs with what the "
        "planner chose.",
    ),
    "logline-rare-class-out-of-reach-still-rising": zoo_scenario(
        23, 35, 2,
        "The plain logline script of the random zoo (development seed 23, configuration 35: Adam at 0.002 for "
        "twelve epochs on the generated tabular data, one class kept at 0.6% of its training labels): "
        "ObjectiveOutOfReach stops the first job after 6 of its 12 epochs; the planner has the next job's debugger "
        "weight its training loss by class, and ObjectiveOutOfReach stops that one too, one epoch after its best "
        "while its held-out accuracy still rose.",
    ),
    "logline-rare-class-weighted-then-logit-adjusted": zoo_scenario(
        45, 35, 3,
        "The plain logline script of the random zoo (development seed 45, configuration 35: a 4x64 tanh MLP, Adam "
        "at 0.002 on the generated tabular data, one class kept at 2% of its samples): the first job misses, the "
        "planner has the next job's debugger weight the training loss by class, that job misses too and no longer "
        "improves, and the next one trains on the logit-adjusted loss.",
    ),
    "logline-adam-rate-raised-recovers": {
        "about": "The random zoo's plain logline script (no debugger line) on digits: two hidden layers of 128 ELU "
        "units (Xavier initialisation), Adam, two epochs. The first job runs at 1e-5 (frozen updates); the run_spec's "
        "declared remedy sets the rate to 0.1, and at that rate the second job's loss spikes to 9 times its initial "
        "value in its first steps, no NaN and no rule firing, then falls and meets the objective.",
        "zoo_data": {"dataset": "digits", "seed": 3},
        "run_spec": {"source_dir": str(REPO / "bench" / "zoo_scripts"), "entry_point": "tabular_logline.py",
                     "hyperparameters": {"learning-rate": 1e-05, "n-epochs": 2, "bs": 64, "act": "elu",
                                         "n-layers": 2, "hidden-units": 128, "batchnorm": 0, "opt": "adam",
                                         "init-gain": 1.0, "scale-inputs": 1, "clip-norm": 0.0, "seed": 0},
                     "metric_definitions": [{"Name": "validation:accuracy", "Regex": "val_acc=([0-9.]+)"}],
                     "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
                     "remedies": {"*": [{"hyperparameter": "learning-rate", "set_to": 0.1}],
                                  "objective_missed": [{"hyperparameter": "learning-rate", "set_to": 0.1}]},
                     "max_num_retraining": 2},
    },
    "mlp-adam-rate-raised-loss-rising": {
        "about": "The random zoo's smdebug MLP script (bench/healthy_scripts/mlp_train.py) on digits: two hidden "
        "layers of 128 ELU units at PyTorch's default initialisation, Adam, two epochs. The first job runs at 1e-5 "
        "(frozen updates); the run_spec's declared remedy sets the rate to 0.1, and at that rate the second job's "
        "training loss rises to several times its initial value and stays there, spiking, with no NaN.",
        "zoo_data": {"dataset": "digits", "seed": 3},
        "run_spec": {"source_dir": str(REPO / "bench" / "healthy_scripts"), "entry_point": "mlp_train.py",
                     "hyperparameters": {"lr": 1e-05, "epochs": 2, "batch-size": 64, "activation": "elu",
                                         "depth": 2, "hidden": 128, "norm": "none", "optimizer": "adam", "seed": 0},
                     "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
                     "remedies": {"*": [{"hyperparameter": "lr", "set_to": 0.1}],
                                  "objective_missed": [{"hyperparameter": "lr", "set_to": 0.1}]},
                     "max_num_retraining": 2},
    },
    "gru-sgd-lr-2-gradient-spikes": {
        "about": "The random zoo's plain GRU sequence classifier (bench/zoo_scripts/sequence_rnn.py: one layer of 64, "
        "its last hidden state to a linear head) on the generated waves, SGD with momentum 0.9 at a rate of 2, no "
        "gradient clipping, four epochs: the gradient norm spikes to hundreds and the loss to several times its "
        "initial value, with no NaN. The next job runs with what the planner chose.",
        "zoo_data": {"dataset": "waves", "seed": 3},
        "run_spec": {"source_dir": str(REPO / "bench" / "zoo_scripts"), "entry_point": "sequence_rnn.py",
                     "hyperparameters": {"cell": "gru", "hidden": 64, "num-layers": 1, "optimizer": "sgd", "lr": 2.0,
                                         "clip": 0.0, "epochs": 4, "batch-size": 64, "seed": 1},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size",
                                              "grad_clip": "clip"},
                     "metric_definitions": [{"Name": "validation:accuracy", "Regex": "val_accuracy=([0-9.]+)"}],
                     "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
                     "max_num_retraining": 2},
    },
    "lstm-rmsprop-rate-lowered-learned-nothing": {
        "about": "The random zoo's plain sequence classifier (bench/zoo_scripts/sequence_rnn.py) as an LSTM of two "
        "layers of 64 under RMSprop at 0.05, ten times its usual rate, clipped at 1, on the generated waves: its loss "
        "rises to about 6 times its start and comes back above it, at chance. Lowered to RMSprop's usual 0.01, the "
        "next job's loss jumps at its first steps and stays at its start, at chance; the third job runs with what the "
        "planner chose then.",
        "zoo_data": {"dataset": "waves", "seed": 924},
        "run_spec": {"source_dir": str(REPO / "bench" / "zoo_scripts"), "entry_point": "sequence_rnn.py",
                     "hyperparameters": {"lr": 0.05, "epochs": 10, "batch-size": 64, "num-layers": 2, "hidden": 64,
                                         "cell": "lstm", "optimizer": "rmsprop", "clip": 1.0, "seed": 924},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size",
                                              "grad_clip": "clip"},
                     "metric_definitions": [{"Name": "validation:accuracy", "Regex": "val_accuracy=([0-9.]+)"}],
                     "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
                     "max_num_retraining": 3},
    },
    "gru-adam-rate-lowered-plateau": {
        "about": "The same sequence classifier as a GRU of one layer of 32 under Adam at 1.0, a hundred times its "
        "usual rate, clipped at 1: job 1 blows up. At Adam's usual 0.001 the next job's loss creeps down from its "
        "start, never above it, on a plateau at chance, and learns only after epoch 5 (recorded with the planner's "
        "choice then, more epochs).",
        "zoo_data": {"dataset": "waves", "seed": 972},
        "run_spec": {"source_dir": str(REPO / "bench" / "zoo_scripts"), "entry_point": "sequence_rnn.py",
                     "hyperparameters": {"lr": 1.0, "epochs": 10, "batch-size": 64, "num-layers": 1, "hidden": 32,
                                         "cell": "gru", "optimizer": "adam", "clip": 1.0, "seed": 972},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size",
                                              "grad_clip": "clip"},
                     "metric_definitions": [{"Name": "validation:accuracy", "Regex": "val_accuracy=([0-9.]+)"}],
                     "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
                     "max_num_retraining": 3},
    },
    "regression-nan-targets": {
        "about": "The random zoo's plain MLP regressor (bench/zoo_scripts/tabular_regression.py: MSE, Adam at 0.002, "
        "batch 128) on make_friedman1 with 5% of its training targets NaN (the inputs and the held-out targets are "
        "finite): the first batch holds NaN targets, so the loss is NaN at step 0, before any update. The next job "
        "runs with what the planner chose.",
        "zoo_data": {"dataset": "friedman1", "seed": 3, "target_nan": 0.05},
        "run_spec": {**REGRESSION_SPEC, "hyperparameters": {**REGRESSION_HYPERPARAMETERS, "batch-size": 128},
                     "max_num_retraining": 2},
    },
    "regression-nan-targets-first-at-step-2": {
        "about": "The same regressor and data with 1% of the training targets NaN (the random zoo's targets_nan): "
        "the first two shuffled batches hold none, so two updates are finite and the loss and every gradient are NaN "
        "at step 2. The next job runs with what the planner chose.",
        "zoo_data": {"dataset": "friedman1", "seed": 3, "target_nan": 0.01},
        "run_spec": {**REGRESSION_SPEC, "hyperparameters": {**REGRESSION_HYPERPARAMETERS}, "max_num_retraining": 2},
    },
    "regression-targets-x1000-normalize-knob": {
        "about": "The same regressor, data and objective (targets x1000, RMSE <= 400 in their unit, SGD at 0.01) from a "
        "script that can standardise its targets itself (--normalize-targets, mapped as normalize_targets, off): the "
        "planner turns the knob on. The next job runs with what the planner chose.",
        "zoo_data": {"dataset": "friedman1", "seed": 3, "target_scale": 1000.0},
        "run_spec": {**REGRESSION_SPEC,
                     "hyperparameter_names": {**REGRESSION_SPEC["hyperparameter_names"],
                                              "normalize_targets": "normalize-targets"},
                     "hyperparameters": {**REGRESSION_HYPERPARAMETERS, "optimizer": "sgd", "lr": 0.01,
                                         "normalize-targets": 0},
                     "objective": {**REGRESSION_SPEC["objective"], "target_value": 400.0}, "max_num_retraining": 2},
    },
    "regression-targets-x1000": {
        "about": "The random zoo's plain MLP regressor (MSE, SGD with momentum 0.9 at 0.01) on make_friedman1 whose "
        "targets, in both channels, are a thousand times their standardised values (a unit a thousand times "
        "smaller), the objective stated in that unit (RMSE <= 400): the initial loss is about 1e6. The next job runs "
        "with what the planner chose.",
        "zoo_data": {"dataset": "friedman1", "seed": 3, "target_scale": 1000.0},
        "run_spec": {**REGRESSION_SPEC, "hyperparameters": {**REGRESSION_HYPERPARAMETERS, "optimizer": "sgd",
                                                            "lr": 0.01},
                     "objective": {**REGRESSION_SPEC["objective"], "target_value": 400.0}, "max_num_retraining": 2},
    },
    "regression-sgd-2e-5-frozen": {
        "about": "The random zoo's plain MLP regressor (MSE, SGD with momentum 0.9 at 2e-5, batch 64) on "
        "make_friedman1 for 40 epochs against a Minimize objective of RMSE <= 0.40: the loss stands still and "
        "LossNotDecreasing stops the job early (held-out RMSE 0.97); the next job runs at the rate the planner chose.",
        "zoo_data": {"dataset": "friedman1", "seed": 3},
        "run_spec": {**REGRESSION_SPEC, "hyperparameters": {**REGRESSION_HYPERPARAMETERS, "optimizer": "sgd",
                                                            "lr": 2e-05, "epochs": 40, "batch-size": 64},
                     "max_num_retraining": 2},
    },
    "regression-rmse-flat-out-of-reach": {
        "about": "The random zoo's plain MLP regressor (MSE, Adam at 0.002, batch 32) for 40 epochs against a "
        "Minimize objective of RMSE <= 0.40, on make_friedman1 with only the features that hardly predict the target "
        "(x4, a tenth of its variance, and the five noise features): the training loss falls as the network fits "
        "its training set while the held-out RMSE stays between 0.92 and 0.94 from the first epoch on. The next job "
        "runs with what the planner chose.",
        "zoo_data": {"dataset": "friedman1", "seed": 3, "keep_features": [4, 5, 6, 7, 8, 9]},
        "run_spec": {**REGRESSION_SPEC, "hyperparameters": {**REGRESSION_HYPERPARAMETERS, "epochs": 40},
                     "max_num_retraining": 2},
    },
    "mlp-declared-remedies-out-of-reach": {
        "about": "The MLP on digits with SGD at 0.05 for twelve epochs, 60% of its training labels replaced by labels "
        "drawn at random, and remedies the run_spec declares (no hyperparameter_names): its epochs stated as "
        "\"epochs\" in its hyperparameters, ObjectiveOutOfReach judges it and stops it at half its epochs, far short "
        "of accuracy >= 0.9; the declared objective_missed remedy answers.",
        "dataset": "digits",
        "train_faults": {"label_noise": 0.6},
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 12, "weight-decay": 0.0},
                     "remedies": {"objective_missed": [{"hyperparameter": "weight-decay", "set_to": 0.001}]},
                     "max_num_retraining": 1},
    },
    "mlp-declared-epochs-left-to-the-script": {
        "about": "The MLP on the generated blobs with a declared remedy on its rate and its epochs left to the "
        "script's own default (5): the run_spec states no epoch count, so ObjectiveOutOfReach cannot judge the job and "
        "its status says so; the job completes and the run's end names the rule and why.",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05},
                     "remedies": {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 0.001}]},
                     "max_num_retraining": 1},
    },
    "mlp-batch-norm-batch-of-one": {
        "about": "The MLP with batch norm on the generated blobs (1,600 training samples) at a batch size of 123: "
        "the first epoch's last batch holds one sample and BatchNorm1d refuses it in training; the next job runs "
        "with what the planner chose.",
        "run_spec": {**MLP_SPEC, "hyperparameters": {"lr": 0.05, "epochs": 3, "batch-size": 123, "batch-norm": True},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs",
                                              "batch_size": "batch-size", "add_batch_norm": "batch-norm"},
                     "max_num_retraining": 2},
    },
    "ddp-script-without-checkpoints": {
        "about": "examples/ddp (a script that writes no checkpoints) on one process, one epoch, against an objective "
        "it misses: the evidence set's TrainLonger would resume, and there is nothing to resume from.",
        "run_spec": {"source_dir": str(REPO / "examples" / "ddp"), "entry_point": "train.py",
                     "hyperparameters": {"lr": 0.05, "epochs": 1},
                     "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
                     "metric_definitions": MLP_SPEC["metric_definitions"],
                     "objective": {**MLP_SPEC["objective"], "target_value": 0.99}, "max_num_retraining": 1},
    },
    "xgboost-overtraining": {
        "about": "examples/xgboost (breast cancer, trees that overfit): Overtraining at round 10 (issue 20).",
        "xgboost_data": True,
        "run_spec": {**json.loads((REPO / "examples" / "xgboost" / "run_spec.json").read_text()),
                     "source_dir": str(REPO / "examples" / "xgboost"), "max_num_retraining": 1},
    },
}  # fmt: skip


def channels_for(scenario: dict[str, Any], work: Path) -> list[str]:
    if "zoo_data" in scenario:  # a data set of the random zoo (bench/zoo_data.py), its faults as given
        import numpy as np
        import zoo_data

        settings = dict(scenario["zoo_data"])
        keep = settings.pop("keep_features", None)
        x_train, y_train, x_held, y_held = zoo_data.make_data(settings.pop("dataset"), settings.pop("seed"), **settings)
        if keep is not None:  # only these input columns reach the script
            x_train, x_held = x_train[:, keep], x_held[:, keep]
        options = []
        for name, x, y in (("train", x_train, y_train), ("validation", x_held, y_held)):
            directory = work / "zoo-data" / name
            directory.mkdir(parents=True, exist_ok=True)
            np.save(directory / "x.npy", x)
            np.save(directory / "y.npy", y)
            options += ["--channel", f"{name}={directory}"]
        return options
    if "zoo_configuration" in scenario:
        import zoo_random

        channels = zoo_random.write_channels(zoo_configuration(*scenario["zoo_configuration"]), False, work / "zoo")
        return [option for name, directory in channels.items() for option in ("--channel", f"{name}={directory}")]
    if scenario["run_spec"].get("framework") == "xgboost":
        out = work / "xgboost-data"
        subprocess.run([sys.executable, str(REPO / "examples" / "xgboost" / "make_data.py"), "--out", str(out)], check=True)
        return ["--channel", f"train={out / 'train'}", "--channel", f"validation={out / 'validation'}"]
    if scenario["run_spec"].get("source_dir", "").endswith(("mlp", "plain")):  # the same data files
        import numpy as np
        from make_data import make_dataset
        from zoo_random import training_faults

        x, y = make_dataset(scenario.get("dataset", "blobs"))
        faults = scenario.get("train_faults")
        channels = {"train": (x, y)}
        if faults:  # the faults on the training 80% only; the held-out 20% stays clean, as a user's would
            cut = int(len(y) * 0.8)
            faulty = training_faults(x[:cut], y[:cut], np.random.default_rng(1), int(y.max()) + 1, **faults)
            channels = {"train": faulty, "validation": (x[cut:], y[cut:])}
        options = []
        for name, (features, labels) in channels.items():
            directory = work / "mlp-data" / name
            directory.mkdir(parents=True, exist_ok=True)
            np.save(directory / "x.npy", features)
            np.save(directory / "y.npy", labels)
            options += ["--channel", f"{name}={directory}"]
        return options
    return []


#: The per-step scalars the hook writes to its TensorBoard events (debugger/storage/tensorboard_events.py), by the
#: name the recording keeps them under.
COURSE_TAGS = {"loss": "loss", "gradient_norm": "gradient_norm/total", "learning_rate": "learning_rate"}


def training_course(events_dir: Path) -> dict[str, list] | None:
    """The job's raw course, step by step: the loss, total gradient norm and learning rate of every training step, as
    the hook wrote them to its TensorBoard event files (a non-finite value as the string "nan" or "inf"); None
    when the job wrote none."""
    import math
    import struct

    from tensorboardX.proto import event_pb2

    values: dict[str, dict[int, float]] = {name: {} for name in COURSE_TAGS}
    names = {tag: name for name, tag in COURSE_TAGS.items()}
    for path in sorted(events_dir.glob("events.out.tfevents.*")) if events_dir.is_dir() else ():
        data, position = path.read_bytes(), 0
        while position + 12 <= len(data):  # TFRecord: length (8 bytes), its CRC (4), the event, its CRC (4)
            (length,) = struct.unpack("<Q", data[position:position + 8])
            event = event_pb2.Event()
            event.ParseFromString(data[position + 12:position + 12 + length])
            position += 16 + length
            for value in event.summary.value:
                if value.tag in names:
                    values[names[value.tag]][event.step] = value.simple_value
    steps = sorted(set().union(*(series.keys() for series in values.values())))
    if not steps:
        return None

    def shown(value: float | None):
        return value if value is None or math.isfinite(value) else str(value)

    return {"step": steps, **{name: [shown(series.get(step)) for step in steps] for name, series in values.items()}}


def record(name: str, threads: int) -> Path:
    scenario = SCENARIOS[name]
    with tempfile.TemporaryDirectory(prefix=f"recorded-{name}-") as temporary:
        work = Path(temporary)
        spec_file = work / "run_spec.json"
        spec_file.write_text(json.dumps(scenario["run_spec"]))
        command = [
            str(REPO / ".venv" / "bin" / "remediate"), "local", "run", "--run-spec", str(spec_file),
            "--run-dir", str(work / "run"), "--num-threads", str(threads), "--json", *channels_for(scenario, work),
        ]  # fmt: skip
        finished = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env={**os.environ})
        if finished.returncode not in (0, 1):
            raise SystemExit(f"{name}: remediate exited {finished.returncode}\n{finished.stderr[-3000:]}")
        summary = json.loads(finished.stdout)
        payload = json.loads((work / "run" / "final-payload.json").read_text())["state"]
        bucket = payload["run_spec"]["bucket"]
        jobs = []
        for attempt in payload["attempts"]:
            output = work / "run" / "buckets" / bucket / "debug-output" / attempt["job_name"]
            status_file = output / "rule-status.json"
            jobs.append(
                {
                    "hyperparameters": attempt["hyperparameters"],
                    "describe": {
                        "TrainingJobName": attempt["job_name"],
                        "TrainingJobStatus": attempt["job_status"],
                        "FailureReason": attempt["failure_reason"],
                        "FinalMetricDataList": [
                            {"MetricName": metric, "Value": value} for metric, value in attempt["metrics"].items()
                        ],
                    },
                    "rule_status": json.loads(status_file.read_text()) if status_file.is_file() else None,
                    "decision_then": (attempt.get("decision") or {}).get("reason"),
                    "course": training_course(output / "tensorboard-output"),
                }
            )
    run_spec = {key: value for key, value in scenario["run_spec"].items() if key != "source_dir"}
    document = {"scenario": name, "about": scenario["about"], "run_spec": run_spec, "jobs": jobs,
                "end_reason": summary.get("end_reason")}  # fmt: skip
    path = HERE / f"{name}.json"
    path.write_text(json.dumps(document, indent=1) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", help=f"default: all ({', '.join(SCENARIOS)})")
    parser.add_argument("--num-threads", type=int, default=2)
    args = parser.parse_args()
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r}; known: {', '.join(SCENARIOS)}")
    for name in args.scenarios or SCENARIOS:
        path = record(name, args.num_threads)
        print(f"{name}: {path.relative_to(REPO)} ({path.stat().st_size} bytes)", flush=True)


if __name__ == "__main__":
    main()
