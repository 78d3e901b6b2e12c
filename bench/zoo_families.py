"""The random repair zoo's families beyond the classifying MLPs and CNNs (drawn in space ``v2`` only, so a seed of
space ``v1`` draws what it always drew): regression, recurrent sequence models and a transformer encoder, with the
user scripts that train them and the faults that come with them. ``bench/zoo_random.py`` draws from here.

Scripts (``bench/zoo_scripts/``; none mentions the debugger: every one is watched with zero script change):

* ``regression_plain``: ``tabular_regression.py``, plain PyTorch, an MLP under MSE or Huber, SGD (momentum 0.9) or
  Adam; prints ``validation:rmse`` and ``validation:mae`` per epoch.
* ``regression_lightning``: ``lightning_regressor.py``, a PyTorch Lightning module (MSE or smooth L1), Lightning's
  ``gradient_clip_val``; prints ``val_rmse`` and ``val_mae`` per validation epoch.
* ``rnn_plain``: ``sequence_rnn.py``, a GRU or LSTM classifier on its last hidden state, SGD (momentum 0.9), RMSprop
  or Adam, with or without gradient-norm clipping.
* ``hf_trainer``: ``hf_text_classifier.py``, Hugging Face's Trainer on a BertForSequenceClassification built from a
  config (AdamW, linear decay, ``max_grad_norm``), logging ``eval_accuracy`` each epoch.

Space, per family (every choice uniform; the objectives sit where each family's healthy bases meet them with room:
docs/decisions/029-random-zoo-space-v2.md):

* regression: data ``diabetes`` or ``friedman1`` (``bench/zoo_data.py``), objective Minimize RMSE or MAE of the
  held-out set (on standardised targets: diabetes RMSE <= 0.92 or MAE <= 0.72, friedman1 RMSE <= 0.40 or
  MAE <= 0.32); 1-3 hidden layers of 32, 64 or 128; Adam at 0.002 or SGD at 0.03; MSE or Huber; batch 16, 32 or 64;
  20 epochs.
* recurrent: data ``waves``, objective held-out accuracy >= 0.9; GRU or LSTM, 1 or 2 layers of 32 or 64; Adam at
  0.01 or RMSprop at 0.005, clipping at 1.0 or none; batch 32 or 64; 10 epochs. SGD enters as a fault only: it is no
  healthy base on this task (docs/decisions/029-random-zoo-space-v2.md).
* transformer: data ``tokens``, objective ``eval_accuracy`` >= 0.9; hidden 32 or 64, 1 or 2 layers, 2 heads; AdamW
  at 5e-4 (the Trainer's); batch 16 or 32; 4 epochs.

Faults (a family draws among its own; ``lr_high``, ``lr_frozen``, ``few_epochs`` and ``label_noise`` as in ``v1``):

* ``diverge_no_nan`` (recurrent): a rate at which the loss rises and spikes without overflowing, clipping off:
  RMSprop at 0.5 (an RMSprop base), or SGD at 2.0 (an Adam base whose user switched to SGD at that rate).
* ``exploding_recurrent`` (recurrent, base with clipping): clipping off and the rate x10.
* ``targets_unscaled`` (regression): the targets of both channels x1000, a unit a thousand times smaller; the
  objective's target value is stated in that unit (x1000) as its user would.
* ``targets_nan`` (regression): 1% of the training targets NaN.
"""

from __future__ import annotations

import random
from typing import Any

REGRESSION_TARGETS = {("diabetes", "rmse"): 0.92, ("diabetes", "mae"): 0.72,
                      ("friedman1", "rmse"): 0.40, ("friedman1", "mae"): 0.32}
CLASSIFICATION_TARGETS = {"waves": 0.9, "tokens": 0.9}
EPOCHS = {"regression": 20, "recurrent": 10, "transformer": 4}
RATES = {"regression": {"adam": 0.002, "sgd": 0.03},
         "recurrent": {"adam": 0.01, "rmsprop": 0.005},
         "transformer": {"adamw": 5e-4}}
#: diverge_no_nan: the base's optimizer -> the optimizer and rate of the fault.
DIVERGING = {"rmsprop": ("rmsprop", 0.5), "adam": ("sgd", 2.0)}
TARGET_SCALE = 1000.0
TARGET_NAN_SHARE = 0.01
FAULTS = {
    "regression": ("lr_high", "lr_frozen", "few_epochs", "targets_unscaled", "targets_nan"),
    "recurrent": ("lr_high", "lr_frozen", "few_epochs", "label_noise", "diverge_no_nan", "exploding_recurrent"),
    "transformer": ("lr_high", "lr_frozen", "few_epochs", "label_noise"),
}
NEW_FAULT_KINDS = ("diverge_no_nan", "exploding_recurrent", "targets_unscaled", "targets_nan")


def style_fields() -> list[dict[str, Any]]:
    """The new scripts as ``zoo_random.Style`` fields (``zoo_random`` builds the Style objects)."""
    regression_faults = FAULTS["regression"]
    return [
        dict(name="regression_plain", source_dir="bench/zoo_scripts", entry_point="tabular_regression.py",
             family="regression", datasets=("diabetes", "friedman1"), channels=("train", "validation"),
             metric="validation:{metric}", objective_type="Minimize",
             metric_definitions=({"Name": "validation:{metric}", "Regex": r"validation:{metric} ([0-9.eE+-]+|nan)"},),
             held_out_regex=r"validation:{metric} ([0-9.eE+-]+|nan)", held_out_percent=False,
             names={"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size",
                    "weight_decay": "weight-decay", "grad_clip": "grad-clip", "activation": "activation"},
             knobs={"lr": "lr", "epochs": "epochs", "batch_size": "batch-size", "depth": "layers", "width": "hidden",
                    "activation": "activation", "optimizer": "optimizer", "loss": "loss", "clip": "grad-clip",
                    "weight_decay": "weight-decay", "seed": "seed"},
             activations=("relu", "tanh", "elu"), norms=("none",), faults=regression_faults,
             optimizers=("adam", "sgd")),
        dict(name="regression_lightning", source_dir="bench/zoo_scripts", entry_point="lightning_regressor.py",
             family="regression", datasets=("diabetes", "friedman1"), channels=("train", "validation"),
             metric="val_{metric}", objective_type="Minimize",
             metric_definitions=({"Name": "val_{metric}", "Regex": r"val_{metric}=([0-9.eE+-]+|nan)"},),
             held_out_regex=r"val_{metric}=([0-9.eE+-]+|nan)", held_out_percent=False,
             names={"learning_rate": "lr", "num_epochs": "max-epochs", "batch_size": "batch-size",
                    "grad_clip": "gradient-clip-val"},
             knobs={"lr": "lr", "epochs": "max-epochs", "batch_size": "batch-size", "depth": "n-layers",
                    "width": "hidden-dim", "optimizer": "optimizer", "loss": "loss", "clip": "gradient-clip-val",
                    "seed": "seed"},
             activations=("relu",), norms=("none",), faults=regression_faults, optimizers=("adam", "sgd")),
        dict(name="rnn_plain", source_dir="bench/zoo_scripts", entry_point="sequence_rnn.py", family="recurrent",
             datasets=("waves",), channels=("train", "validation"), metric="validation:accuracy",
             metric_definitions=({"Name": "validation:accuracy", "Regex": r"val_accuracy=([0-9.]+)"},),
             held_out_regex=r"val_accuracy=([0-9.]+)", held_out_percent=False,
             names={"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size", "grad_clip": "clip"},
             knobs={"lr": "lr", "epochs": "epochs", "batch_size": "batch-size", "depth": "num-layers",
                    "width": "hidden", "cell": "cell", "optimizer": "optimizer", "clip": "clip", "seed": "seed"},
             activations=(), norms=("none",), faults=FAULTS["recurrent"], optimizers=("sgd", "rmsprop", "adam")),
        dict(name="hf_trainer", source_dir="bench/zoo_scripts", entry_point="hf_text_classifier.py",
             family="transformer", datasets=("tokens",), channels=("train", "validation"), metric="eval_accuracy",
             metric_definitions=({"Name": "eval_accuracy", "Regex": r"'eval_accuracy': '([0-9.]+)'"},),
             held_out_regex=r"'eval_accuracy': '([0-9.]+)'", held_out_percent=False,
             names={"learning_rate": "learning_rate", "num_epochs": "num_train_epochs",
                    "batch_size": "per_device_train_batch_size", "weight_decay": "weight_decay",
                    "grad_clip": "max_grad_norm"},
             knobs={"lr": "learning_rate", "epochs": "num_train_epochs", "batch_size": "per_device_train_batch_size",
                    "depth": "num_hidden_layers", "width": "hidden_size", "clip": "max_grad_norm",
                    "weight_decay": "weight_decay", "seed": "seed"},
             activations=(), norms=("none",), faults=FAULTS["transformer"], optimizers=("adamw",)),
    ]  # fmt: skip


def draw_base(rng: random.Random, style, fault: str) -> dict[str, Any]:
    """A healthy base configuration of the style's family, drawn so that ``fault`` can be applied to it."""
    family = style.family
    optimizer = rng.choice(tuple(RATES[family]))
    base: dict[str, Any] = {"dataset": rng.choice(style.datasets), "optimizer": optimizer,
                            "lr": RATES[family][optimizer], "epochs": EPOCHS[family]}
    if family == "regression":
        base.update(metric=rng.choice(("rmse", "mae")), depth=rng.choice((1, 2, 3)), width=rng.choice((32, 64, 128)),
                    activation=rng.choice(style.activations), loss=rng.choice(("mse", "huber")),
                    batch_size=rng.choice((16, 32, 64)), clip=0.0)
    elif family == "recurrent":
        clip = 1.0 if fault == "exploding_recurrent" else rng.choice((0.0, 1.0))
        base.update(cell=rng.choice(("gru", "lstm")), depth=rng.choice((1, 2)), width=rng.choice((32, 64)),
                    batch_size=rng.choice((32, 64)), clip=clip)
    else:
        base.update(depth=rng.choice((1, 2)), width=rng.choice((32, 64)), batch_size=rng.choice((16, 32)), clip=1.0)
    if "weight_decay" in style.knobs:
        base["weight_decay"] = 0.0
    base["seed"] = rng.randrange(1000)
    return base


def draw_fault(rng: random.Random, fault: str, base: dict[str, Any]) -> dict[str, Any] | None:
    """The change of a fault of the new families; None for a fault ``zoo_random`` draws itself."""
    if fault == "diverge_no_nan":
        optimizer, rate = DIVERGING[base["optimizer"]]
        change = {"optimizer": optimizer} if optimizer != base["optimizer"] else {}
        return {**change, "lr": rate, "clip": 0.0}
    if fault == "exploding_recurrent":
        return {"lr": base["lr"] * 10, "clip": 0.0}
    if fault == "targets_unscaled":
        return {"target_scale": TARGET_SCALE}
    if fault == "targets_nan":
        return {"target_nan": TARGET_NAN_SHARE}
    return None


def target(dataset: str, metric: str | None, target_scale: float | None) -> float:
    """The objective's target value of a configuration of a new family."""
    if metric is None:
        return CLASSIFICATION_TARGETS[dataset]
    return REGRESSION_TARGETS[(dataset, metric)] * (target_scale or 1.0)
