"""The ``evidence`` remedy set (``policy`` "evidence", the default): for every failure the debugger names, the ladder
of remedies the evidence calls for, tried in order (``lambdas.remediation.planning.choice``). Each ladder is a list of
the catalogue's named remedies (``remedies.catalogue``), some narrowed to a condition or given a note for that
failure.

The ladders share an order: a rate outside the optimizer's range first (no tuning question), then what names a cause
in the run's own settings (raw inputs, an initialisation far from the usual scale, a sigmoid stack), then what the
evidence says of this failure, then the general answers. The set is built for the optimizer the job steps
(:func:`evidence_remedies`): its learning-rate remedies judge a rate in that optimizer's range, so Adam's usual 1e-3
is not "too small" as it would be for SGD.
"""

from __future__ import annotations

from typing import Any

from contracts.remedies import ANY_RULE, BATCH_OF_ONE, OBJECTIVE_MISSED, OUT_OF_MEMORY
from contracts.rule_status import HELD_OUT_RISING
from lambdas.remediation.planning.learning_rate_ranges import SGD_RANGE, RateRange
from lambdas.remediation.planning.remedies.catalogue import (
    CLIP_FACTOR,
    COLLAPSE_FACTOR,  # noqa: F401 - the set's constants, importable from here
    INIT_SCALE_GRADIENT_NORM,
    MIN_BATCH_SIZE,
    MOSTLY_DEAD,
    NOISY_LABELS_RATE_FACTOR,
    SHORT_JOB_EPOCHS,
    STILL_FALLING_EPOCH_FACTOR,
    Catalogue,
    Remedy,
    variant,
)
from lambdas.remediation.planning.remedies.xgboost import XGBOOST_EVIDENCE_REMEDIES

#: The SGD range the reference network was measured in (every optimizer's range is derived by the same ratios).
STABLE_WARMUP_LEARNING_RATE = SGD_RANGE.stable_warmup
LEARNING_RATE_FLOOR = SGD_RANGE.floor
LEARNING_RATE_CEILING = SGD_RANGE.ceiling
USUAL_LEARNING_RATE = SGD_RANGE.usual


def evidence_remedies(rates: RateRange = SGD_RANGE) -> dict[str, list[dict[str, Any]]]:
    """The evidence set with its learning-rate remedies in ``rates``, the range of the optimizer the job steps; the
    same rules' remedies for gradient-boosted trees after the networks' (a run keeps those on its own names)."""
    c = Catalogue(rates)
    remedies = {
        "ExplodingTensor": exploding_tensor(c),
        "VanishingGradient": vanishing_gradient(c),
        "DeadRelu": dead_relu(c),
        "SaturatedActivation": saturated_activation(c),
        "AllZero": all_zero(c),
        "UnchangedTensor": unchanged_tensor(c),
        "TensorVariance": tensor_variance(c),
        "ClassImbalance": [variant(c.weight_classes, resume=True)],
        "Overfit": overfit(c),
        "Overtraining": overtraining(c),
        "LossNotDecreasing": loss_not_decreasing(c),
        "WeightUpdateRatio": weight_update_ratio(c),
        "PoorWeightInitialization": poor_weight_initialization(c),
        "StalledTrainingRule": [
            {"name": "LoadInProcess", "hyperparameter": "num_workers", "set_to": 0, "resume": True,
             "note": "No step for the threshold's seconds: a data-loading worker that hangs (a deadlock after fork) "
             "stalls training; loading in the training process cannot."},
        ],  # fmt: skip
        "CheckInputImages": [
            {"name": "NormalizeInputs", "hyperparameter": "normalize_inputs", "set_to": True,
             "note": "Inputs far from zero mean and unit variance slow or destabilise training."},
        ],  # fmt: skip
        OUT_OF_MEMORY: [halve_batch_size(c)],
        BATCH_OF_ONE: [batch_size_one_smaller()],
        OBJECTIVE_MISSED: objective_missed(c),
        ANY_RULE: [
            *c.for_target_scale, c.lower_rate_on_divergence_into_range, c.learning_rate_into_range, *c.on_divergence, c.add_batch_norm,
            c.lower_learning_rate,
        ],
    }
    for key, entries in XGBOOST_EVIDENCE_REMEDIES.items():
        remedies[key] = [*remedies.get(key, []), *entries]
    return remedies


def exploding_tensor(c: Catalogue) -> list[Remedy]:
    """Batch norm at once for a network badly scaled at initialisation that blows up in warmup (a lower warmup rate
    would only delay it), then the rates of the phase it blew up in, then clipping."""
    return [
        *c.for_target_scale,
        c.learning_rate_into_range,
        c.normalize_inputs,
        c.rescale_large_initialisation,
        variant(
            c.add_batch_norm,
            when={"phase": "warmup", "early": True, "initial_gradient_norm_above": INIT_SCALE_GRADIENT_NORM},
            note="An initialisation-scale gradient norm with no batch norm means the network is badly scaled at "
            "initialisation, and blowing up in the first steps of warmup means a lower warmup rate would only delay "
            "the explosion.",
        ),
        variant(c.add_batch_norm, note="Without batch norm, lowering the learning rates only delays the blow-up."),
        c.cap_warmup_learning_rate,
        variant(c.lower_warmup_learning_rate, when={"phase": "warmup"}, note="The warmup rate is too high for this network."),
        variant(c.lower_learning_rate, when={"phase": "main"}, note="The main learning rate is too high."),
        variant(c.clip_gradients, note=f"Clipping the total gradient norm at {CLIP_FACTOR:g} times the size it had "
                "before it blew up (measured in the job) bounds each step, so one large gradient cannot throw the "
                "weights off, and leaves the usual steps whole (a fixed norm of 1 would stall a network whose gradient "
                "norm is in the thousands)."),
        c.lower_rate_on_divergence,
        variant(c.lower_learning_rate, note="A lower learning rate is the remaining remedy for an explosion."),
    ]  # fmt: skip


def vanishing_gradient(c: Catalogue) -> list[Remedy]:
    """An initialisation far below the usual scale shrinks the gradients itself: the cause the symptom names, first.
    Raw inputs and a large initialisation blow a network up and leave it collapsed: the causes, before the rate;
    after a spike, the rate active then; else what shrinks gradients layer by layer, then larger steps."""
    return [
        c.lower_rate_on_divergence_into_range,
        c.learning_rate_into_range,
        c.rescale_small_initialisation_and_switch_to_relu,
        c.rescale_small_initialisation,
        c.normalize_inputs,
        c.rescale_large_initialisation,
        *c.after_collapse,
        c.lower_rate_on_divergence,
        c.learning_rate_up_into_range,
        variant(c.add_batch_norm, also=[], note="Batch norm keeps the gradients scaled."),
        variant(c.switch_to_leaky_relu, note="ReLU units can die and stop passing gradient; leaky ReLU keeps one."),
        c.switch_to_relu,
        variant(c.rescale_initialisation, note="Initial weights far below the usual scale shrink the gradients layer "
                "by layer."),
        variant(c.raise_warmup_learning_rate, when={"phase": "warmup"}, note="The warmup rate is too small to move "
                "the weights."),
        variant(c.raise_learning_rate, note="The updates are too small."),
    ]  # fmt: skip


def dead_relu(c: Catalogue) -> list[Remedy]:
    return [
        c.learning_rate_into_range,
        c.normalize_inputs,
        *c.after_collapse,
        variant(c.switch_to_leaky_relu, when={"hyperparameters": {"activation": "relu"}, "issue_value_above": MOSTLY_DEAD}),
        variant(c.lower_learning_rate, note="Large steps push ReLU units into the region where they stay off."),
        c.switch_to_leaky_relu,
        variant(c.add_batch_norm, also=[], note="Batch norm keeps pre-activations centred, so units stay alive."),
    ]  # fmt: skip


def saturated_activation(c: Catalogue) -> list[Remedy]:
    return [
        c.learning_rate_into_range,
        c.normalize_inputs,
        *c.after_collapse,
        c.rescale_large_initialisation,
        variant(c.rescale_initialisation, note="Large initial weights drive tanh/sigmoid inputs far from zero, where "
                "their derivative vanishes."),
        variant(c.add_batch_norm, also=[], note="Batch norm keeps the activations' inputs near zero."),
        variant(c.lower_learning_rate, note="Large steps push the activations' inputs into saturation."),
    ]  # fmt: skip


def all_zero(c: Catalogue) -> list[Remedy]:
    return [
        *c.after_collapse,
        variant(c.rescale_initialisation, note="Weights initialised to zero (init_scale 0) give every unit the same "
                "zero output and gradient: they never differ."),
        variant(c.raise_learning_rate, note="The tensors stay zero: nothing moves them."),
    ]  # fmt: skip


def unchanged_tensor(c: Catalogue) -> list[Remedy]:
    return [
        *c.after_collapse,
        c.learning_rate_up_into_range,
        variant(c.raise_learning_rate, multiply_by=10, resume=True,
                note="The tensors do not change between steps: the updates are too small to move them."),
    ]  # fmt: skip


def tensor_variance(c: Catalogue) -> list[Remedy]:
    above, below = {"issue_kind": "above_max"}, {"issue_kind": "below_min"}
    return [
        c.learning_rate_into_range,
        variant(c.rescale_initialisation, when={"early": True}, note="Tensors whose spread is out of bounds from the "
                "first steps were initialised at the wrong scale."),
        variant(c.lower_learning_rate, when=above, note="Tensors spreading beyond the bound mean the updates are too "
                "large."),
        variant(c.start_weight_decay, when=above, resume=True, note="Weight decay pulls growing weights back."),
        variant(c.raise_weight_decay, when=above, resume=True, note="Stronger weight decay pulls growing weights back."),
        *c.after_collapse,
        variant(c.raise_learning_rate, when=below, resume=True, note="Tensors that barely vary mean the updates are "
                "too small."),
    ]  # fmt: skip


def overfit(c: Catalogue) -> list[Remedy]:
    return [
        variant(c.stop_early_keep_best, note="The validation loss rises while the training loss falls: the best model "
                "is behind, so stop at the best epoch and keep it."),
        variant(c.start_weight_decay, note="The model memorises its training set: L2 regularisation, trained again "
                "from the start."),
        variant(c.raise_weight_decay, note="Stronger L2 regularisation narrows the gap, trained again from the start."),
        variant(c.add_dropout, note="Dropout regularises a model that memorises its training set, trained again from "
                "the start."),
    ]  # fmt: skip


def overtraining(c: Catalogue) -> list[Remedy]:
    return [
        variant(c.stop_early_keep_best, note="The validation loss stopped improving while training went on: stop at "
                "the best epoch and keep that model."),
        variant(c.start_weight_decay, note="L2 regularisation delays overtraining."),
        variant(c.raise_weight_decay, note="Stronger L2 regularisation delays overtraining."),
    ]  # fmt: skip


def loss_not_decreasing(c: Catalogue) -> list[Remedy]:
    """A held-out loss rising while the training loss fell is overfitting (early stopping, regularisers, then
    smaller steps), not a rate that overshoots; a loss that never moved gets the usual rate or the settings known to
    stall training; a loss that rose gets a lower rate; one that falls too slowly larger steps."""
    held_out_rising, stagnant = {"issue_kind": HELD_OUT_RISING}, {"issue_kind": "stagnant"}
    return [
        *c.for_target_scale,
        c.lower_rate_on_divergence_into_range,
        c.learning_rate_into_range,
        c.normalize_inputs,
        c.rescale_large_initialisation,  # such a network's loss starts far up and does not fall
        *c.after_collapse,
        *c.on_divergence,
        variant(c.stop_early_keep_best, when=held_out_rising, note="The held-out loss rose while the training loss "
                "fell: stop after the best epoch and keep that model."),
        *c.regularise(held_out_rising),
        variant(c.lower_learning_rate, name="SmallerStepsOnHeldOutRise", when=held_out_rising,
                note="The held-out loss rose while the training loss fell, and the script has no early stopping or "
                "regulariser left to set: smaller steps fit less of what does not carry over in the same epochs."),
        variant(c.learning_rate_to_usual, when={**c.learning_rate_to_usual["when"], **stagnant},
                note=f"The loss never moved: a{c.learning_rate_to_usual['note'][1:]}"),
        c.learning_rate_up_into_range,
        *[variant(remedy, when={**remedy["when"], **stagnant}) for remedy in c.stalling_settings],
        variant(c.add_batch_norm, when=stagnant, note="The loss never started to fall: batch norm keeps every layer's "
                "inputs and gradients scaled."),
        variant(c.raise_learning_rate_to_usual, when=stagnant),
        variant(c.lower_warmup_learning_rate, when={"phase": "warmup", "loss": "rising"}, note="The loss oscillates or "
                "rises."),
        variant(c.raise_warmup_learning_rate, when={"phase": "warmup", "loss": "falling"}, note="The loss falls too "
                "slowly."),
        variant(c.lower_learning_rate, when={"issue_kind": "rising"}, note="The loss rose well above its lowest point: "
                "the learning rate overshoots."),
        variant(c.lower_learning_rate, when={"loss": "rising"}, note="The loss rises: the learning rate overshoots."),
        # only when the rule found the loss flat: a loss that rose again after falling is no slow descent
        variant(c.raise_learning_rate, when={"loss": "falling", "issue_kind": "flat"}, resume=True,
                note="The loss falls, too slowly to count: larger steps."),
        variant(c.lower_learning_rate, note="The loss stopped decreasing: the main rate overshoots."),
    ]  # fmt: skip


def weight_update_ratio(c: Catalogue) -> list[Remedy]:
    return [
        c.learning_rate_into_range,
        c.learning_rate_up_into_range,
        variant(c.lower_learning_rate, when={"issue_kind": "too_large"}, note="Updates large against the weights they "
                "change mean the learning rate is too high."),
        *c.after_collapse,
        variant(c.raise_learning_rate, when={"issue_kind": "too_small"}, resume=True, note="Updates tiny against the "
                "weights mean the learning rate is too low."),
        c.lower_learning_rate,
    ]  # fmt: skip


def poor_weight_initialization(c: Catalogue) -> list[Remedy]:
    return [
        c.learning_rate_into_range,
        c.rescale_small_initialisation,
        c.rescale_large_initialisation,
        variant(c.rescale_initialisation, note="Activations of very different scale across layers mean the initial "
                "weights are badly scaled."),
        variant(c.add_batch_norm, also=[], note="Batch norm rescales every layer's activations."),
    ]  # fmt: skip


def halve_batch_size(c: Catalogue) -> Remedy:
    """Out of memory: half the batch, and the learning rates with it (the linear scaling rule, Goyal et al. 2017)."""
    return {
        "name": "HalveBatchSize",
        "hyperparameter": "batch_size",
        "multiply_by": 0.5,
        "min": MIN_BATCH_SIZE,
        "also": [
            {"hyperparameter": "learning_rate", "multiply_by": 0.5, "min": c.rates.floor},
            {"hyperparameter": "warmup_learning_rate", "multiply_by": 0.5, "min": c.rates.floor},
        ],
        "note": "Activations grow with the batch: half the batch needs about half their memory, and the learning "
        "rates are halved with it (linear scaling rule).",
    }


def batch_size_one_smaller() -> Remedy:
    """One sample left in an epoch's last batch: a batch one smaller leaves k + 1 there after k full batches. The
    rate stays: a batch one sample smaller changes no other step."""
    return {
        "name": "BatchSizeOneSmaller",
        "hyperparameter": "batch_size",
        "add": -1,
        "min": 2,
        "note": "A batch-norm layer needs two or more samples per training batch, and the training set's size leaves "
        "one in the last: one sample less per batch leaves more there (setting drop_last=True in the script's "
        "DataLoader is the fix that holds for any size).",
    }


def objective_missed(c: Catalogue) -> list[Remedy]:
    """A job that ended quietly and missed its objective: no rule names a cause, so the run's settings, its training
    labels and the loss's course over the whole job do. The epoch that met the objective first (a result the run
    measured); then settings known to stall training; then what the training labels say (a rare class, labels that
    look wrong or learnt by heart); then the loss's course (a job too short to read it, a loss that never fell, one
    still falling, one settled); last, the debugger's changes to the loss that answer a course wrong labels explain."""
    not_past_peak = {"objective_past_peak": False}
    return [
        {
            "name": "StopAtBestEpoch",
            "hyperparameter": "num_epochs",
            "to_best_epoch": True,
            "when": {"objective_met_before_end": True},
            "note": "The held-out metric met the objective at that epoch and fell below it as training went on: the "
            "same run stopped there (a script that seeds its training repeats that epoch's result).",
        },
        *c.for_target_scale,
        c.lower_rate_on_divergence_into_range,
        c.learning_rate_into_range,
        # a completed job has no epochs left to continue: again from the start, at the usual rate
        variant(c.learning_rate_to_usual, resume=False),
        *c.stalling_settings,
        c.normalize_inputs,
        # a loss that diverged did not fail to learn for want of epochs, and tells nothing of its labels
        *c.on_divergence,
        c.lower_rate_learned_nothing,
        variant(c.weight_classes, when={"training_labels": "imbalanced"}),
        variant(c.train_longer, name="TrainLongerOnRareClass", multiply_by=2,
                when={"training_labels": "imbalanced", "loss_weighted_by_class": True, "objective_still_rising": True},
                note="The held-out metric still improved when the job ended: the rare class's few samples take more "
                "epochs to learn."),
        c.robust_loss_in_job,
        *c.regularise({"training_labels": "memorised"}),
        variant(c.train_longer, name="TrainLongerOnNoisyLabels", multiply_by=STILL_FALLING_EPOCH_FACTOR,
                when={"training_labels": "noisy", "objective_still_rising": True},
                note="The held-out metric still improved when the job ended: more epochs before smaller steps."),
        variant(c.lower_learning_rate, name="SmallerStepsOnNoisyLabels", multiply_by=NOISY_LABELS_RATE_FACTOR,
                when={"training_labels": ["noisy", "memorised"], "loss_robust_to_wrong_labels": False},
                note="Many training labels look wrong: smaller steps fit fewer of them in the same epochs, so the model "
                "keeps more of what the correct ones share. Checking and correcting the labels is the fix."),
        variant(c.train_longer, multiply_by=STILL_FALLING_EPOCH_FACTOR,
                when={"hyperparameters_below": {"num_epochs": SHORT_JOB_EPOCHS},
                      "loss_shape": ["flat", "settled", "unknown"], **not_past_peak},
                note=f"Fewer than {SHORT_JOB_EPOCHS} epochs are too few to tell a loss that settled or never fell from "
                "one that falls slowly: more epochs before the rate or the network is changed."),
        variant(c.add_batch_norm, when={"loss_shape": "flat"}, note="Batch norm keeps every layer's inputs and "
                "gradients scaled, so the loss can start to fall."),
        variant(c.raise_learning_rate_to_usual, when={"loss_shape": "flat"}),
        variant(c.train_longer, multiply_by=STILL_FALLING_EPOCH_FACTOR,
                when={"loss_shape": "still_falling", **not_past_peak},
                note="Training was stable and still improving when it stopped: more epochs."),
        *c.regularise({"loss_shape": "memorised"}),
        variant(c.lower_learning_rate, multiply_by=0.3, when={"loss_shape": "settled"},
                note="The training loss settled short of the objective: smaller steps settle lower."),
        # not for a model that fits its training set: more epochs would fit it further
        variant(c.train_longer, multiply_by=2, when={"loss_shape": ["flat", "settled", "unknown"], **not_past_peak},
                note="Training was stable but too short to reach the objective: more epochs."),
        c.weight_classes_in_job,
        c.adjust_logits_in_job,
        c.robust_loss_past_peak,
        c.robust_loss_on_short_match,
    ]  # fmt: skip


#: The evidence set in SGD's range (the built-in example's optimizer), as the execution input checks it.
EVIDENCE_REMEDIES = evidence_remedies()
