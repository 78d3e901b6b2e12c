"""The random repair zoo's drawing: ``draw(seed, n, space)`` -> n failing training configurations, each a healthy
base configuration plus one injected fault, with its healthy twin (the same configuration without the fault). Pure
and deterministic per seed: no training, no file written (``write_channels`` writes a configuration's data when run).

Two spaces. ``v1`` (the default) is the space below, drawn exactly as it always was, so every earlier seed's figures
can be reproduced. ``v2`` widens it to what users train: a model family is drawn first, uniformly among ``mlp`` and
``cnn`` (the ``v1`` styles and faults) and ``regression``, ``recurrent`` and ``transformer`` (``bench/zoo_families.py``:
their scripts, space and faults), then one of the family's fault kinds, then a style of the family that can
express it; its streams are its own (a ``v2`` seed shares nothing with the ``v1`` seed of the same number).

The ``v1`` space (every choice uniform unless said otherwise):

* script style (the user's training script; the model family follows from it), with how it reports its held-out
  metric and the run_spec a user of it writes (``hyperparameter_names`` maps the product's conventional names to the
  script's own; every script was written as a user writes one, none for this product):

  - ``mlp_smd``: ``bench/healthy_scripts/mlp_train.py``, an MLP with smdebug's hook from the JSON file,
    ``hook.save_scalar("validation:accuracy", sm_metric=True)``; ``--lr``, ``--epochs``, ``--batch-size``,
    ``--norm none|batch|layer``; no initialisation or input-scaling knob (it always standardises).
  - ``cnn_smd``: ``bench/healthy_scripts/cnn_train.py``, a two-convolution CNN, smdebug's ``register_hook``,
    ``save_scalar`` without ``sm_metric``, no ``set_mode``; pixels scaled to [0, 1] by the script; digits only.
  - ``logline``: ``bench/zoo_scripts/tabular_logline.py``, plain PyTorch (no debugger line: zero script change),
    ``--learning-rate``, ``--n-epochs``, ``--bs``, ``--act``, ``--batchnorm 0|1``, ``--init-gain``,
    ``--scale-inputs 0|1``; reports ``epoch=3 val_acc=0.91`` lines, read through ``metric_definitions``.
  - ``smd_text_lr``: ``bench/zoo_scripts/digits_smd.py``, argparse with ``--lr`` as a string, ``--use-bn``/
    ``--standardize`` as true/false strings, channels ``training`` and ``test``; smdebug
    (``import smdebug.pytorch as smd``) and ``hook.save_scalar("val_acc", acc)``; logs the accuracy in percent.
    Its run_spec writes the rate as a JSON number: written as text (``"lr": "0.002"``) the product refuses it for
    the evidence remedies, though ``hyperparameter_names`` maps it to ``learning_rate``.

* family: ``mlp`` (three styles) or ``cnn`` (``cnn_smd``).
* data set: ``digits`` (scikit-learn's bundled 8x8 digits, 1,797 images, 10 classes, pixel values 0..16; objective
  held-out accuracy >= 0.9) or ``tabular`` (scikit-learn's ``make_classification``: 3,000 x 20, 4 classes, each
  feature in its own raw unit and offset, as tabular data comes; objective >= 0.8); ``cnn``: digits. 80/20 split.
* depth: 1-4 hidden layers (mlp); the CNN has its two convolutions.
* width: 32, 64 or 128 hidden units (mlp); 8 or 16 channels (cnn).
* normalization: none or batch (``mlp_smd`` also layer norm, ``cnn_smd`` also group norm).
* activation: relu, tanh or elu (``mlp_smd`` and ``cnn_smd`` also gelu).
* optimizer: SGD with momentum 0.9 at learning rate 0.05 (cnn 0.02), or Adam at 0.002.
* batch size: 32, 64 or 128.  Epochs: 12.  Script seed: 0-999 (also the data split's seed).

Faults, one per configuration: the fault kind is drawn first, uniformly, then a base configuration whose script
can express it (so every kind has the same share); the healthy twin is that base configuration:

* ``lr_high``: learning rate x10, x100 or x1000.
* ``lr_frozen`` (frozen updates): learning rate x1e-5.
* ``init_scale``: initial weights at x0.001, x0.01, x10 or x100 their usual scale (styles with that knob).
* ``activation``: sigmoid in a network of 3-4 hidden layers (styles that offer sigmoid).
* ``unscaled_inputs``: the script's own input standardisation switched off (styles with that switch).
  These three are drawn on a base without normalization: a normalization layer absorbs them (in development, seeds
  7 and 11, a sigmoid stack with layer norm, a x0.001 initialisation and unscaled inputs with batch norm each met
  the objective at their first launch).
* ``label_noise``: 40% or 60% of the training labels replaced by labels drawn at random (held-out labels clean).
* ``rare_class``: class 0 kept at 2% of its training samples (the held-out set keeps all its classes).
* ``few_epochs``: 1 epoch instead of 12.

Not a fault here: the other optimizer at this one's learning rate (Adam at SGD's 0.05, SGD at Adam's 0.002) left both
configurations drawn with it in development (seed 11) meeting their objective at the first launch.

No drawn run_spec sets ``rules``: each job is watched by the product's default rules at their default parameters,
and the ``evidence`` remedy set (the product's default for a user's script) answers them.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import numpy as np
import zoo_data
import zoo_families

ROOT = Path(__file__).resolve().parent.parent
SPACES = ("v1", "v2")

EPOCHS = 12
FAULT_KINDS = ("lr_high", "lr_frozen", "init_scale", "activation", "unscaled_inputs", "label_noise", "rare_class",
               "few_epochs")
#: Faults a normalization layer absorbs: drawn on a base without one.
UNNORMALIZED_FAULTS = ("init_scale", "activation", "unscaled_inputs")
DATASETS = {"digits": 0.9, "tabular": 0.8}  # data set -> the objective's held-out accuracy
BASE_RATES = {"sgd": 0.05, "adam": 0.002}
CNN_SGD_RATE = 0.02
WIDTHS = (32, 64, 128)
CNN_CHANNELS = (8, 16)
BATCH_SIZES = (32, 64, 128)
DEPTHS = (1, 2, 3, 4)
#: What a fault's setting is in a base configuration that does not state it.
UNFAULTED = {"init_scale": 1.0, "inputs_scaled": True, "label_noise": 0.0, "rare_class": 1.0, "target_scale": 1.0,
             "target_nan": 0.0}
#: The faults that change the data rather than the script's arguments.
DATA_FAULT_KEYS = ("label_noise", "rare_class", "target_scale", "target_nan")
FAULT_KINDS_V2 = FAULT_KINDS + zoo_families.NEW_FAULT_KINDS
FAMILIES_V2 = ("mlp", "cnn", "regression", "recurrent", "transformer")


@dataclasses.dataclass(frozen=True)
class Style:
    """A user's script and the run_spec a user of it writes."""

    name: str
    source_dir: str  # relative to the checkout
    entry_point: str
    family: str
    datasets: tuple[str, ...]
    channels: tuple[str, str]  # the train and the held-out channel's names
    metric: str  # the objective's metric name
    metric_definitions: tuple[dict[str, str], ...]  # () when the script saves the metric with the debugger
    held_out_regex: str  # the held-out accuracy in the job's log, for the bench's own check (not given to the product)
    held_out_percent: bool
    names: dict[str, str]  # conventional -> the script's (run_spec hyperparameter_names)
    knobs: dict[str, str]  # the space's dimensions -> the script's argument
    activations: tuple[str, ...]
    norms: tuple[str, ...]
    faults: tuple[str, ...]  # the fault kinds this script can express
    objective_type: str = "Maximize"
    optimizers: tuple[str, ...] = ("sgd", "adam")

    @property
    def script(self) -> Path:
        return ROOT / self.source_dir / self.entry_point

    def metric_name(self, settings: dict[str, Any]) -> str:
        """The objective's metric (a regression script reports its RMSE and MAE: the drawn one)."""
        return self.metric.format(metric=settings.get("metric"))

    def definitions(self, settings: dict[str, Any]) -> list[dict[str, str]]:
        return [{key: value.format(metric=settings.get("metric")) for key, value in definition.items()}
                for definition in self.metric_definitions]

    def held_out_pattern(self, settings: dict[str, Any]) -> str:
        return self.held_out_regex.format(metric=settings.get("metric"))


_ALL_DATA_FAULTS = ("lr_high", "lr_frozen", "label_noise", "rare_class", "few_epochs")
STYLES: dict[str, Style] = {
    style.name: style
    for style in (
        Style("mlp_smd", "bench/healthy_scripts", "mlp_train.py", "mlp", ("digits", "tabular"),
              ("train", "validation"), "validation:accuracy", (), r"val_accuracy=([0-9.]+)", False,
              {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size", "weight_decay": "weight-decay"},
              {"lr": "lr", "epochs": "epochs", "batch_size": "batch-size", "depth": "depth", "width": "hidden",
               "activation": "activation", "norm": "norm", "optimizer": "optimizer", "seed": "seed"},
              ("relu", "tanh", "elu", "gelu", "sigmoid"), ("none", "batch", "layer"),
              (*_ALL_DATA_FAULTS, "activation")),
        Style("cnn_smd", "bench/healthy_scripts", "cnn_train.py", "cnn", ("digits",),
              ("train", "validation"), "validation:accuracy", (), r"validation accuracy ([0-9.]+)", False,
              {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch-size", "weight_decay": "weight-decay"},
              {"lr": "lr", "epochs": "epochs", "batch_size": "batch-size", "width": "channels",
               "activation": "activation", "norm": "norm", "optimizer": "optimizer", "seed": "seed"},
              ("relu", "tanh", "elu", "gelu"), ("none", "batch", "group"), _ALL_DATA_FAULTS),
        Style("logline", "bench/zoo_scripts", "tabular_logline.py", "mlp", ("digits", "tabular"),
              ("train", "validation"), "validation:accuracy",
              ({"Name": "validation:accuracy", "Regex": r"val_acc=([0-9.]+)"},), r"val_acc=([0-9.]+)", False,
              {"learning_rate": "learning-rate", "num_epochs": "n-epochs", "batch_size": "bs", "activation": "act",
               "add_batch_norm": "batchnorm", "init_scale": "init-gain", "normalize_inputs": "scale-inputs",
               "grad_clip": "clip-norm"},
              {"lr": "learning-rate", "epochs": "n-epochs", "batch_size": "bs", "depth": "n-layers",
               "width": "hidden-units", "activation": "act", "norm": "batchnorm", "optimizer": "opt",
               "init_scale": "init-gain", "inputs_scaled": "scale-inputs", "seed": "seed"},
              ("relu", "tanh", "elu", "sigmoid"), ("none", "batch"),
              (*_ALL_DATA_FAULTS, "activation", "init_scale", "unscaled_inputs")),
        Style("smd_text_lr", "bench/zoo_scripts", "digits_smd.py", "mlp", ("digits", "tabular"),
              ("training", "test"), "val_acc", (), r"validation accuracy ([0-9.]+)%", True,
              {"learning_rate": "lr", "num_epochs": "epochs", "batch_size": "batch", "add_batch_norm": "use-bn",
               "init_scale": "weight-scale", "normalize_inputs": "standardize"},
              {"lr": "lr", "epochs": "epochs", "batch_size": "batch", "depth": "layers", "width": "width",
               "activation": "activation", "norm": "use-bn", "optimizer": "optim", "init_scale": "weight-scale",
               "inputs_scaled": "standardize", "seed": "seed"},
              ("relu", "tanh", "elu", "sigmoid"), ("none", "batch"),
              (*_ALL_DATA_FAULTS, "activation", "init_scale", "unscaled_inputs")),
    )
}  # fmt: skip
#: The ``v2`` space's new scripts; ``STYLES`` stays the ``v1`` space's.
NEW_STYLES: dict[str, Style] = {fields["name"]: Style(**fields) for fields in zoo_families.style_fields()}
ALL_STYLES: dict[str, Style] = {**STYLES, **NEW_STYLES}


@dataclasses.dataclass(frozen=True)
class DrawnConfiguration:
    """One drawn configuration: the base (the space's choices), the fault and what it changed."""

    seed: int  # the zoo's seed
    index: int
    style: str
    base: dict[str, Any]  # dataset, depth, width, norm, activation, optimizer, lr, batch_size, epochs, seed, ...
    fault: str
    fault_change: dict[str, Any]  # the base's entries the fault changes, and the data fault (label_noise, rare_class)
    space: str = "v1"

    @property
    def name(self) -> str:
        space = "" if self.space == "v1" else self.space
        return f"s{self.seed}{space}-{self.index:02d}-{self.style}-{self.fault}"

    @property
    def family(self) -> str:
        return ALL_STYLES[self.style].family

    @property
    def dataset(self) -> str:
        return self.base["dataset"]

    def objective_target(self, healthy: bool = False) -> float:
        """The objective's target value: a regression's is in the data's unit (x1000 when the targets are)."""
        if self.dataset in DATASETS:
            return DATASETS[self.dataset]
        settings = self.settings(healthy)
        return zoo_families.target(self.dataset, settings.get("metric"), settings.get("target_scale"))

    @property
    def target(self) -> float:
        return self.objective_target()

    def meets(self, value: float, healthy: bool = False) -> bool:
        """Whether a held-out value meets the objective (at most the target for a Minimize objective)."""
        target = self.objective_target(healthy)
        if ALL_STYLES[self.style].objective_type == "Minimize":
            return value <= target
        return value >= target

    def settings(self, healthy: bool = False) -> dict[str, Any]:
        """The space's choices with (or, for the healthy twin, without) the fault."""
        return dict(self.base) if healthy else {**self.base, **self.fault_change}

    def data_faults(self, healthy: bool = False) -> dict[str, Any]:
        settings = self.settings(healthy)
        return {key: settings[key] for key in DATA_FAULT_KEYS if settings.get(key)}

    def hyperparameters(self, healthy: bool = False) -> dict[str, Any]:
        """The script's own arguments, as its user writes them in the run_spec."""
        return script_hyperparameters(ALL_STYLES[self.style], self.settings(healthy))

    def execution_input(self, healthy: bool = False) -> dict[str, Any]:
        """The run_spec: the script, its hyperparameters, the objective; no rules, no remedies (the defaults)."""
        style = ALL_STYLES[self.style]
        settings = self.settings(healthy)
        spec: dict[str, Any] = {
            "source_dir": str(ROOT / style.source_dir),
            "entry_point": style.entry_point,
            "hyperparameters": self.hyperparameters(healthy),
            "hyperparameter_names": dict(style.names),
            "objective": {"metric_name": style.metric_name(settings), "type": style.objective_type,
                          "target_value": self.objective_target(healthy)},
            "policy": "evidence",
        }
        if style.metric_definitions:
            spec["metric_definitions"] = style.definitions(settings)
        return spec

    def describe(self) -> str:
        settings = self.settings(healthy=True)
        family = ALL_STYLES[self.style].family
        change = ", ".join(f"{key} {self.base.get(key, UNFAULTED.get(key))} -> {value}"
                           for key, value in self.fault_change.items())
        if family in ("mlp", "cnn"):
            shape = f"{settings['width']} channels" if family == "cnn" else f"{settings['depth']}x{settings['width']}"
            model = f"{family} {shape} {settings['norm']}-norm {settings['activation']}"
        elif family == "regression":
            model = (f"regression {settings['depth']}x{settings['width']} {settings['activation']} {settings['loss']} "
                     f"loss, {settings['metric']} objective")
        elif family == "recurrent":
            model = f"{settings['cell']} {settings['depth']}x{settings['width']} clip {settings['clip']:g}"
        else:
            model = f"bert {settings['depth']}x{settings['width']}"
        return (f"{model} {settings['optimizer']} lr {settings['lr']:g} batch {settings['batch_size']} on "
                f"{self.dataset}; fault {self.fault}: {change}")

    def to_json(self) -> dict[str, Any]:
        out = {"name": self.name, "seed": self.seed, "index": self.index, "style": self.style, "base": self.base,
               "fault": self.fault, "fault_change": self.fault_change, "description": self.describe()}
        if self.space != "v1":
            out.update(space=self.space, family=self.family)
        return out


def script_hyperparameters(style: Style, settings: dict[str, Any]) -> dict[str, Any]:
    """The space's settings in the script's own argument names and value forms."""
    knobs = style.knobs
    out: dict[str, Any] = {}
    for dimension, argument in knobs.items():
        value = settings.get(dimension)
        if dimension == "norm" and style.name in ("logline", "smd_text_lr"):
            value = settings["norm"] == "batch"
            value = int(value) if style.name == "logline" else value
        elif dimension == "inputs_scaled":
            value = settings.get("inputs_scaled", True)
            value = int(value) if style.name == "logline" else value
        elif dimension == "init_scale":
            value = settings.get("init_scale", 1.0)
        elif dimension == "lr":
            # A number in the run_spec (its script parses the text it gets on argv): the product refuses a rate
            # written as JSON text, "lr": "0.002", for the evidence remedies (a finding of issue 21's zoo).
            value = float(f"{float(value):.6g}")
        elif dimension == "clip":
            value = float(settings.get("clip", 0.0))
        if value is None:
            continue
        out[argument] = value
    if style.name in ("mlp_smd", "cnn_smd"):
        out["weight-decay"] = 0.0  # listed by their users: the scripts take it, and it is a knob one tunes
    if style.name == "logline":
        out["clip-norm"] = 0.0
    return out


def _draw_base(rng: random.Random, style: Style, fault: str) -> dict[str, Any]:
    family = style.family
    optimizer = rng.choice(("sgd", "adam"))
    lr = BASE_RATES[optimizer] if not (family == "cnn" and optimizer == "sgd") else CNN_SGD_RATE
    base = {
        "dataset": rng.choice(style.datasets),
        "depth": rng.choice(DEPTHS) if family == "mlp" else None,
        "width": rng.choice(WIDTHS if family == "mlp" else CNN_CHANNELS),
        "norm": rng.choice(style.norms),
        "activation": rng.choice([name for name in style.activations if name != "sigmoid"]),
        "optimizer": optimizer,
        "lr": lr,
        "batch_size": rng.choice(BATCH_SIZES),
        "epochs": EPOCHS,
        "seed": rng.randrange(1000),
    }
    if fault == "activation" and base["depth"] < 3:
        base["depth"] = rng.choice((3, 4))  # the fault is a deep sigmoid stack: the base is drawn deep
    if fault in UNNORMALIZED_FAULTS:
        base["norm"] = "none"
    return {key: value for key, value in base.items() if value is not None}


def _draw_fault(rng: random.Random, fault: str, base: dict[str, Any]) -> dict[str, Any]:
    if fault == "lr_high":
        return {"lr": base["lr"] * rng.choice((10, 100, 1000))}
    if fault == "lr_frozen":
        return {"lr": base["lr"] * 1e-5}
    if fault == "init_scale":
        return {"init_scale": rng.choice((0.001, 0.01, 10.0, 100.0))}
    if fault == "activation":
        return {"activation": "sigmoid"}
    if fault == "unscaled_inputs":
        return {"inputs_scaled": False}
    if fault == "label_noise":
        return {"label_noise": rng.choice((0.4, 0.6))}
    if fault == "rare_class":
        return {"rare_class": 0.02}
    if fault == "few_epochs":
        return {"epochs": 1}
    raise ValueError(f"fault must be one of {', '.join(FAULT_KINDS)}; got {fault!r}")


def draw(seed: int, n: int, space: str = "v1") -> list[DrawnConfiguration]:
    """``n`` configurations for ``seed`` in ``space``: the same list every time for the same seed (and the first k of
    a longer draw are the k of a shorter one)."""
    if n < 0:
        raise ValueError(f"n must be >= 0; got {n}")
    if space not in SPACES:
        raise ValueError(f"space must be one of {', '.join(SPACES)}; got {space!r}")
    drawn = []
    for index in range(n):
        if space == "v2":
            drawn.append(_draw_v2(seed, index))
            continue
        rng = random.Random(f"repair-zoo/{seed}/{index}")  # one stream per configuration: prefixes are stable
        fault = rng.choice(FAULT_KINDS)
        style = STYLES[rng.choice(sorted(name for name, style in STYLES.items() if fault in style.faults))]
        base = _draw_base(rng, style, fault)
        drawn.append(DrawnConfiguration(seed, index, style.name, base, fault, _draw_fault(rng, fault, base)))
    return drawn


def _draw_v2(seed: int, index: int) -> DrawnConfiguration:
    rng = random.Random(f"repair-zoo-v2/{seed}/{index}")
    family = rng.choice(FAMILIES_V2)
    styles = {name: style for name, style in ALL_STYLES.items() if style.family == family}
    fault = rng.choice(sorted({kind for style in styles.values() for kind in style.faults}))
    style = styles[rng.choice(sorted(name for name, style in styles.items() if fault in style.faults))]
    if family in ("mlp", "cnn"):
        base = _draw_base(rng, style, fault)
        change = _draw_fault(rng, fault, base)
    else:
        base = zoo_families.draw_base(rng, style, fault)
        change = zoo_families.draw_fault(rng, fault, base) or _draw_fault(rng, fault, base)
    return DrawnConfiguration(seed, index, style.name, base, fault, change, space="v2")


def healthy_twins(configurations: list[DrawnConfiguration], share: float) -> list[DrawnConfiguration]:
    """The configurations whose healthy twin is run too: evenly spread, ``share`` of them (at least one when any)."""
    if not configurations or share <= 0:
        return []
    every = max(1, round(1 / share))
    return [configuration for configuration in configurations if configuration.index % every == 0]


# --------------------------------------------------------------------------- data


def channel_key(configuration: DrawnConfiguration, healthy: bool) -> str:
    faults = configuration.data_faults(healthy)
    return f"{configuration.dataset}-{configuration.base['seed']}" + "".join(
        f"-{key}{value}" for key, value in sorted(faults.items()))


make_data = zoo_data.make_data
training_faults = zoo_data.training_faults


def write_channels(configuration: DrawnConfiguration, healthy: bool, root: Path) -> dict[str, Path]:
    """The configuration's channels (the style's names -> directories with x.npy, y.npy), written once."""
    base = root / channel_key(configuration, healthy)
    train, held = ALL_STYLES[configuration.style].channels
    channels = {train: base / "train", held: base / "held-out"}
    if not (channels[held] / "y.npy").exists():
        faults = configuration.data_faults(healthy)
        x_train, y_train, x_held, y_held = make_data(configuration.dataset, configuration.base["seed"], **faults)
        for directory, x, y in ((channels[train], x_train, y_train), (channels[held], x_held, y_held)):
            directory.mkdir(parents=True, exist_ok=True)
            np.save(directory / "x.npy", x)
            np.save(directory / "y.npy", y)
    return channels
