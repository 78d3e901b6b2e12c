"""The repair zoo's scenarios: failing and healthy training configurations on two model families (the built-in ELU
ResNet of the AWS blog post, on generated CIFAR-shaped images, and examples/mlp, a user's smdebug script, on
generated clusters and on scikit-learn's bundled 8x8 digits).

Each failing scenario is built to trip one rule (``expect``); each healthy one must trip none (the false-alarm
check); a data-error scenario must end at once, without a relaunch.
"""

from __future__ import annotations

import dataclasses
from typing import Any

FAILING, HEALTHY, DATA_ERROR = "failing", "healthy", "data_error"

#: examples/mlp/train.py's hyperparameters, every knob a remedy may turn given with its starting value.
MLP_HYPERPARAMETERS: dict[str, Any] = {
    "epochs": 4,
    "lr": 0.05,
    "batch-size": 64,
    "depth": 2,
    "activation": "relu",
    "init-scale": 1.0,
    "grad-clip": 0,
    "batch-norm": False,
    "dropout": 0,
    "weight-decay": 0,
    "class-weighting": "none",
    "early-stopping-patience": 0,
    "normalize": True,
    "num-workers": 0,
}
#: The built-in remedy sets' conventional names -> the MLP script's own (run_spec hyperparameter_names).
MLP_HYPERPARAMETER_NAMES = {
    "learning_rate": "lr",
    "num_epochs": "epochs",
    "batch_size": "batch-size",
    "grad_clip": "grad-clip",
    "add_batch_norm": "batch-norm",
    "weight_decay": "weight-decay",
    "init_scale": "init-scale",
    "class_weighting": "class-weighting",
    "early_stopping_patience": "early-stopping-patience",
    "normalize_inputs": "normalize",
    "num_workers": "num-workers",
}
MLP_OBJECTIVE = {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9}
MLP_METRICS = [{"Name": "validation:accuracy", "Regex": "val_accuracy=([0-9.]+)"}]


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    family: str  # "mlp" or "resnet"
    kind: str  # FAILING, HEALTHY or DATA_ERROR
    expect: str | None  # the rule that should fire on the first job (None: none)
    description: str
    dataset: str = "blobs"  # mlp: "blobs" or "digits" (examples/mlp/make_data.py); resnet: generated images
    faults: dict[str, Any] = dataclasses.field(default_factory=dict)  # make_data.make_dataset's fault arguments
    samples: int = 2000  # blobs: how many
    hyperparameters: dict[str, Any] = dataclasses.field(default_factory=dict)  # over the family's defaults
    rules: tuple[Any, ...] | None = None  # the run_spec's rules (None: the workflow's defaults)
    target: float | None = None  # mlp: the validation accuracy to reach (None: MLP_OBJECTIVE's)

    def execution_input(self) -> dict[str, Any]:
        """The run_spec (execution input) of this scenario, before the policy's settings."""
        spec: dict[str, Any] = {}
        if self.family == "mlp":
            spec.update(
                source_dir="examples/mlp",
                entry_point="train.py",
                hyperparameters={**MLP_HYPERPARAMETERS, **self.hyperparameters},
                hyperparameter_names=dict(MLP_HYPERPARAMETER_NAMES),
                metric_definitions=MLP_METRICS,
                objective=MLP_OBJECTIVE if self.target is None else {**MLP_OBJECTIVE, "target_value": self.target},
            )
        elif self.hyperparameters:
            spec["hyperparameters"] = dict(self.hyperparameters)
        if self.rules is not None:
            spec["rules"] = list(self.rules)
        return spec


#: Overfit compares the held-out loss with the training loss; a model that fits well still has a held-out loss
#: above its training loss (ratio ~0.8 on the clusters after 3 epochs), so the zoo flags only a gap above 2x.
OVERFIT_PARAMETERS = {"ratio_threshold": "2", "patience": "2"}
#: Every PyTorch rule at the zoo's parameters: a healthy run under all of them must raise no alarm.
ALL_PYTORCH_RULES = (
    "ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "WeightUpdateRatio", "PoorWeightInitialization",
    "DeadRelu", "SaturatedActivation",
    {"name": "AllZero", "parameters": {"tensor_regex": ".*weight"}},
    {"name": "UnchangedTensor", "parameters": {"collection_names": "weights"}},
    {"name": "TensorVariance", "parameters": {"collection_names": "weights", "min_threshold": "0.000001"}},
    {"name": "ClassImbalance", "parameters": {"threshold_imbalance": "1000", "samples": "2000"}},
    {"name": "Overfit", "parameters": OVERFIT_PARAMETERS},
    {"name": "Overtraining", "parameters": {"patience_validation": "3"}},
    {"name": "StalledTrainingRule", "parameters": {"threshold": "10"}},
)  # fmt: skip


def _mlp(name, kind, expect, description, **fields) -> Scenario:
    return Scenario(name=name, family="mlp", kind=kind, expect=expect, description=description, **fields)


def _resnet(name, kind, expect, description, **fields) -> Scenario:
    return Scenario(name=name, family="resnet", kind=kind, expect=expect, description=description, **fields)


SCENARIOS: tuple[Scenario, ...] = (
    # ---------------------------------------------------------------- failing
    _resnet("resnet-explode", FAILING, "ExplodingTensor",
            "The blog's reference: ELU ResNet-20 without batch norm, warmup learning rate 0.1."),
    _resnet("resnet-loss-flat", FAILING, "LossNotDecreasing",
             "The ELU ResNet with batch norm whose main learning rate is 1e-5: after warmup the loss stands still.",
             hyperparameters={"add_batch_norm": True, "warmup_learning_rate": 0.1, "learning_rate": 0.00001,
                              "num_epochs": 4},
             rules=("ExplodingTensor", {"name": "LossNotDecreasing",
                                        "parameters": {"num_steps": "8", "diff_percent": "15",
                                                       "start_step": "8"}})),
    _mlp("mlp-explode", FAILING, "ExplodingTensor", "Learning rate 20 on the clusters: the loss overflows.",
         hyperparameters={"lr": 20.0}),
    _mlp("mlp-vanishing-sigmoid", FAILING, "VanishingGradient",
         "Eight sigmoid layers at a tenth of the usual initial scale on digits: the gradient dies on the way down.",
         dataset="digits", hyperparameters={"activation": "sigmoid", "depth": 8, "init-scale": 0.1}),
    _mlp("mlp-loss-flat", FAILING, "LossNotDecreasing",
         "Learning rate 1e-5 on digits: the loss does not move.", dataset="digits",
         hyperparameters={"lr": 0.00001, "momentum": 0.0},
         rules=("ExplodingTensor", {"name": "LossNotDecreasing",
                                     "parameters": {"num_steps": "40", "diff_percent": "2", "mode": "TRAIN"}})),
    _mlp("mlp-frozen-updates", FAILING, "WeightUpdateRatio",
         "Learning rate 1e-9: each update is a billionth of its weight, training stands still.",
         hyperparameters={"lr": 1e-9}, rules=("ExplodingTensor", "WeightUpdateRatio")),
    _mlp("mlp-poor-init", FAILING, "PoorWeightInitialization",
         "Four ReLU layers initialised at 8x Xavier's scale on digits: activations grow layer by layer.",
         dataset="digits", hyperparameters={"depth": 4, "init-scale": 8.0},
         rules=("ExplodingTensor", "PoorWeightInitialization")),
    _mlp("mlp-dead-relu", FAILING, "DeadRelu",
         "Learning rate 0.4 with momentum on three ReLU layers: large steps push most units where they never fire.",
         hyperparameters={"lr": 0.4, "depth": 3},
         rules=("ExplodingTensor", "DeadRelu")),
    _mlp("mlp-saturated-tanh", FAILING, "SaturatedActivation",
         "tanh units initialised at 1000x Xavier's scale on digits: their inputs sit where tanh is flat.",
         dataset="digits", hyperparameters={"activation": "tanh", "init-scale": 1000.0},
         rules=("ExplodingTensor", "SaturatedActivation")),
    _mlp("mlp-all-zero", FAILING, "AllZero",
         "Weights initialised to zero: every unit computes the same nothing.",
         hyperparameters={"init-scale": 0.0},
         rules=("ExplodingTensor", {"name": "AllZero", "parameters": {"tensor_regex": ".*weight"}})),
    _mlp("mlp-unchanged-weights", FAILING, "UnchangedTensor",
         "Learning rate 1e-9 on digits: the weights do not change from one saved step to the next.",
         dataset="digits", hyperparameters={"lr": 1e-9},
         rules=("ExplodingTensor", {"name": "UnchangedTensor", "parameters": {"collection_names": "weights"}})),
    _mlp("mlp-tiny-weights", FAILING, "TensorVariance",
         "Weights initialised at a thousandth of Xavier's scale: their variance is far below the bound.",
         hyperparameters={"init-scale": 0.001},
         rules=("ExplodingTensor", {"name": "TensorVariance",
                                    "parameters": {"collection_names": "weights", "min_threshold": "0.000001"}})),
    _mlp("mlp-unscaled-images", FAILING, "CheckInputImages",
         "Digits fed as raw pixel values 0..16 (no standardisation): the input mean is far from zero.",
         dataset="digits", hyperparameters={"normalize": False},
         rules=("ExplodingTensor", "CheckInputImages")),
    _mlp("mlp-rare-class", FAILING, "ClassImbalance",
         "Digits with 5% of the zeros kept: 9 zeros against about 180 of each other digit (ClassImbalance's "
         "documented threshold_imbalance 10).",
         dataset="digits", faults={"imbalance": 0.05},
         rules=("ExplodingTensor", {"name": "ClassImbalance", "parameters": {"samples": "2000"}})),
    _mlp("mlp-stalled-loader", FAILING, "StalledTrainingRule",
         "Two data-loading workers forked while the cached data set is locked: they wait forever.",
         hyperparameters={"num-workers": 2},
         rules=("ExplodingTensor", {"name": "StalledTrainingRule", "parameters": {"threshold": "10"}})),
    _mlp("mlp-overfit-noisy-labels", FAILING, "Overfit",
         "600 clusters with 30% of the labels drawn at random, 256 hidden units, 30 epochs: the model memorises "
         "the noise; the held-out loss rises from the first epoch (best accuracy 0.72).",
         faults={"label_noise": 0.3}, samples=600, target=0.7,
         hyperparameters={"epochs": 30, "hidden": 256},
         rules=("ExplodingTensor", {"name": "Overfit", "parameters": OVERFIT_PARAMETERS})),
    _mlp("mlp-overtraining", FAILING, "Overtraining",
         "The same noisy clusters: the held-out loss stops improving after the first epoch while training goes on.",
         faults={"label_noise": 0.3}, samples=600, target=0.7,
         hyperparameters={"epochs": 30, "hidden": 256},
         rules=("ExplodingTensor", {"name": "Overtraining", "parameters": {"patience_validation": "3"}})),
    # ---------------------------------------------------------------- data errors: no remedy, no relaunch
    _mlp("mlp-bad-labels", DATA_ERROR, None,
         "Five digits labelled 19, a class the model does not have: the loss cannot be computed.",
         dataset="digits", faults={"bad_labels": 5}, hyperparameters={"num-classes": 10}),
    _mlp("mlp-nan-inputs", DATA_ERROR, "ExplodingTensor",
         "1% of the rows' features are NaN: the standardised inputs are all NaN from the first step.",
         faults={"nan_fraction": 0.01}),
    # ---------------------------------------------------------------- healthy: no rule may fire
    _mlp("mlp-healthy-blobs", HEALTHY, None, "The clusters at learning rate 0.05."),
    _mlp("mlp-healthy-digits", HEALTHY, None, "Digits at learning rate 0.05, inputs checked too.", dataset="digits",
         rules=("ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "CheckInputImages")),
    _mlp("mlp-healthy-all-rules", HEALTHY, None, "The clusters at learning rate 0.05 under every PyTorch rule.",
         rules=ALL_PYTORCH_RULES),
    _mlp("mlp-healthy-digits-tanh", HEALTHY, None, "Digits with tanh units and batch norm.", dataset="digits",
         hyperparameters={"activation": "tanh", "batch-norm": True}),
    _resnet("resnet-healthy", HEALTHY, None, "The ELU ResNet with batch norm and warmup 0.05.",
            hyperparameters={"add_batch_norm": True, "warmup_learning_rate": 0.05, "num_epochs": 4}),
)


def by_name() -> dict[str, Scenario]:
    return {scenario.name: scenario for scenario in SCENARIOS}
