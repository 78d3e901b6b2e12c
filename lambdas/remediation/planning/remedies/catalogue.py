"""The named remedies the ``evidence`` set is built from (``remedies.evidence`` arranges them into a ladder per
failure), in the declaration form of ``contracts.remedies``, on the conventional hyperparameter names
(``contracts.conventional_hyperparameters``) and the debugger's settings (``contracts.debugger_settings``).

Each remedy is built for the learning-rate range of the optimizer the job steps
(``lambdas.remediation.planning.learning_rate_ranges``). A ladder may narrow a remedy's condition or give it another
note (:func:`variant`); it keeps the remedy's name, so the planner counts it as the same remedy (one that made the
objective worse is not tried again under another condition). The measurements behind each default are in
docs/decisions/.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from lambdas.remediation.planning.learning_rate_ranges import RateRange

#: An initial total gradient norm above this: the network is badly scaled at initialisation (reference ResNet:
#: 200-950 without batch norm, 7-8 with it).
INIT_SCALE_GRADIENT_NORM = 50.0
#: The most epochs a missed objective is trained for (the run's instance-hours bound a long run first).
MAX_EPOCHS = 200
#: A run still improving trains this many times longer: 1 + 4 epochs reach the objective more often than 1 + 2 + 4.
STILL_FALLING_EPOCH_FACTOR = 4
#: Fewer epochs than this are too few to read a loss's course: the job trains longer before anything else changes.
SHORT_JOB_EPOCHS = 3
#: An init_scale this far from 1 (above it, or below its inverse) is the first suspect (it compounds per layer).
FAR_INIT_SCALE = 5.0
#: Out of memory: the batch is halved, not below this.
MIN_BATCH_SIZE = 8
#: Overfitting: weight decay starts here (SGD's usual value) and is raised tenfold up to the maximum.
MIN_WEIGHT_DECAY = 1e-4
MAX_WEIGHT_DECAY = 1e-2
#: Dropout added against overfitting.
OVERFIT_DROPOUT = 0.3
#: Epochs without a better validation loss before early stopping keeps the best model.
EARLY_STOPPING_PATIENCE = 2
#: A DeadRelu value (percent of a layer's units dead) above this: the activation, not the rate, is changed.
MOSTLY_DEAD = 50.0
#: The loss or gradient norm above this many times its initial value before units died or gradients vanished: a
#: blow-up the network did not survive (healthy runs stay within 4x).
COLLAPSE_FACTOR = 10.0
#: A rate that blew the network up is cut tenfold (halving it blew up again in the reference runs).
COLLAPSE_RATE_FACTOR = 0.1
#: A run that diverged (its loss or gradient norm rose or spiked far above its first step: contracts.divergence) is
#: relaunched at a tenth of its rate, as a collapse is: halving it diverged again (docs/decisions/165).
DIVERGENCE_RATE_FACTOR = 0.1
#: A loss whose steps rose to this many times its first step's value overshot: a rate too small does not raise the
#: loss, and a plateau at a fitting rate creeps down from its start (decision 208).
OVERSHOOT_FACTOR = 1.5
#: Gradients are clipped at this many times the total norm's typical size before it spiked or blew up, measured in the
#: job: a threshold on the network's own scale (Pascanu et al. 2013 clip at a multiple of the average norm; a fixed
#: norm of 1 stalls a network whose gradient norm starts at 1e3). Why 2: docs/decisions/186 and 204.
CLIP_FACTOR = 2.0
#: Clipping is set only where it is off (``grad_clip`` 0): a threshold on the network's scale may be looser than one
#: the script already clips at, and a run that blew up clipped needs a lower rate, not a looser clip.
CLIPPING_OFF = {"hyperparameters": {"grad_clip": 0.0}}
#: A regression's targets this many times what its outputs start at put its loss on a scale no rate of the optimizer's
#: range trains at (targets x1000 under MSE: an initial loss of 7e5; standardised targets: about 1).
TARGET_SCALE_LIMIT = 30.0
#: Optimizers whose steps do not grow with the loss's scale (each parameter's step is normalised by its own gradient's
#: running size): a rate scaled by the targets would be wrong for them (docs/decisions/166).
SCALE_INVARIANT_OPTIMIZERS = frozenset({"Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta"})
#: Training labels that look wrong: the rate times this.
NOISY_LABELS_RATE_FACTOR = 0.3

Remedy = dict[str, Any]


def variant(remedy: Remedy, **fields: Any) -> Remedy:
    """The same remedy (its name kept) under a narrower condition, another note or other settings for one ladder."""
    return {**remedy, **fields}


@dataclasses.dataclass(frozen=True)
class Catalogue:
    """Every remedy of the evidence set, by name, for one optimizer's rate range."""

    rates: RateRange

    # ----- learning rates

    @property
    def lower_learning_rate(self) -> Remedy:
        return {"name": "LowerLearningRate", "hyperparameter": "learning_rate", "multiply_by": 0.5, "min": self.rates.floor}

    @property
    def raise_learning_rate(self) -> Remedy:
        return {"name": "RaiseLearningRate", "hyperparameter": "learning_rate", "multiply_by": 2, "max": self.rates.ceiling}

    @property
    def learning_rate_into_range(self) -> Remedy:
        """A rate above the ceiling is no tuning question: every failure it causes is answered by the usual start."""
        rates = self.rates
        return {
            "name": "LearningRateIntoRange",
            "hyperparameter": "learning_rate",
            "set_to": rates.usual,
            "when": {"hyperparameters_above": {"learning_rate": rates.ceiling}},
            "note": f"A learning rate above {rates.ceiling:g} is outside the range {rates.optimizer} trains networks "
            f"at; {rates.usual:g} is its usual start.",
        }

    @property
    def learning_rate_up_into_range(self) -> Remedy:
        """A rate far below the range moves the weights too little to tell anything: up to a tenth of the usual."""
        rates = self.rates
        return {
            "name": "LearningRateUpIntoRange",
            "hyperparameter": "learning_rate",
            "set_to": rates.raised_to,
            "resume": True,
            "when": {"hyperparameters_below": {"learning_rate": rates.too_small}},
            "note": f"A learning rate below {rates.too_small:g} barely moves the weights with {rates.optimizer}; "
            f"{rates.raised_to:g} is within its usual range.",
        }

    @property
    def learning_rate_to_usual(self) -> Remedy:
        """For a loss that never moved, straight to the usual start (a tenth of it is still too slow)."""
        rates = self.rates
        return {
            **self.learning_rate_up_into_range,
            "name": "LearningRateToUsual",
            "set_to": rates.usual,
            "note": f"A learning rate below {rates.too_small:g} barely moves the weights with {rates.optimizer}; "
            f"{rates.usual:g} is its usual start.",
        }

    @property
    def raise_learning_rate_to_usual(self) -> Remedy:
        rates = self.rates
        return {
            "name": "RaiseLearningRateToUsual",
            "hyperparameter": "learning_rate",
            "at_least": rates.usual,
            "note": f"The updates are too small to move the loss; {rates.usual:g} is {rates.optimizer}'s usual start.",
        }

    @property
    def lower_warmup_learning_rate(self) -> Remedy:
        return {
            "name": "LowerWarmupLearningRate", "hyperparameter": "warmup_learning_rate", "multiply_by": 0.5,
            "min": self.rates.floor,
        }  # fmt: skip

    @property
    def raise_warmup_learning_rate(self) -> Remedy:
        return {
            "name": "RaiseWarmupLearningRate", "hyperparameter": "warmup_learning_rate", "multiply_by": 2,
            "max": self.rates.stable_warmup,
        }  # fmt: skip

    @property
    def cap_warmup(self) -> Remedy:
        """The change batch norm comes with: with it the reference network was stable at warmup <= the cap."""
        return {"hyperparameter": "warmup_learning_rate", "at_most": self.rates.stable_warmup}

    @property
    def cap_warmup_learning_rate(self) -> Remedy:
        return {
            **self.cap_warmup,
            "name": "CapWarmupLearningRate",
            "when": {"phase": "warmup"},
            "note": f"With batch norm the reference network was stable at warmup <= {self.rates.stable_warmup:g}.",
        }

    # ----- a collapse: units died or gradients vanished after the loss or gradient norm spiked

    @property
    def lower_warmup_rate_after_collapse(self) -> Remedy:
        return {
            "name": "LowerWarmupRateAfterCollapse",
            "hyperparameter": "warmup_learning_rate",
            "multiply_by": COLLAPSE_RATE_FACTOR,
            "min": self.rates.floor,
            "when": {"spiked_above": COLLAPSE_FACTOR, "spike_phase": "warmup"},
            "note": "The network blew up during warmup and did not recover: a collapse from a warmup rate too high, "
            "not gradients too small to learn.",
        }

    @property
    def lower_rate_after_collapse(self) -> Remedy:
        return {
            "name": "LowerRateAfterCollapse",
            "hyperparameter": "learning_rate",
            "multiply_by": COLLAPSE_RATE_FACTOR,
            "min": self.rates.floor,
            "when": {"spiked_above": COLLAPSE_FACTOR},
            "note": "The network blew up and did not recover: a collapse from a learning rate too high, not gradients "
            "too small to learn.",
        }

    @property
    def after_collapse(self) -> list[Remedy]:
        """The rate active at the spike, lowered: the warmup rate's first when it spiked in warmup."""
        return [self.lower_warmup_rate_after_collapse, self.lower_rate_after_collapse]

    # ----- a regression whose targets are far from what its outputs start at

    @property
    def normalize_targets(self) -> Remedy:
        return {
            "name": "NormalizeTargets",
            "hyperparameter": "normalize_targets",
            "set_to": True,
            "when": {"target_scale_above": TARGET_SCALE_LIMIT, "hyperparameters": {"normalize_targets": False}},
            "note": "Targets far from the scale the model's outputs start at put the loss on a scale of their own: "
            "standardised targets train at the optimizer's usual rates, and the predictions are scaled back.",
        }

    @property
    def rate_for_target_scale(self) -> Remedy | None:
        """For an optimizer whose steps grow with the loss's scale (SGD): the rate divided by the targets' scale, in
        one launch (halving would need ten launches for a scale of 1000, and stops at the floor). None for Adam and
        its kin, whose steps do not."""
        if self.rates.optimizer in SCALE_INVARIANT_OPTIMIZERS or self.rates.target_scale is not None:
            return None  # a range already on the targets' scale: the rate was divided once
        return {
            "name": "RateForTargetScale",
            "hyperparameter": "learning_rate",
            "divide_by_target_scale": True,
            # once: a rate already divided is below the range's "too small" (the same scale is measured again)
            "when": {"target_scale_above": TARGET_SCALE_LIMIT,
                     "hyperparameters_above": {"learning_rate": self.rates.too_small}},
            "note": f"Under {self.rates.optimizer} the first steps grow with the targets' scale: the rate divided by "
            "that scale takes the steps the usual rate takes on standardised targets. Standardising the targets "
            "in the script is the fix that holds for any rate.",
        }

    @property
    def for_target_scale(self) -> list[Remedy]:
        return [remedy for remedy in (self.normalize_targets, self.rate_for_target_scale) if remedy is not None]

    # ----- a divergence: the loss or the gradient norm rose or spiked far above the run's first step, NaN or not

    @property
    def lower_rate_on_divergence_into_range(self) -> Remedy:
        """A run that diverged at a rate above the optimizer's range: its usual start, the divergence named."""
        rates = self.rates
        return {
            "name": "LowerRateOnDivergence",
            "hyperparameter": "learning_rate",
            "set_to": rates.usual,
            "when": {"diverged": ["rising", "spiking"], "hyperparameters_above": {"learning_rate": rates.ceiling}},
            "note": f"The run diverged at a learning rate above the range {rates.optimizer} trains networks at: "
            f"{rates.usual:g}, its usual start, is below the rate it diverged at. More epochs would not help.",
        }

    @property
    def lower_rate_on_divergence(self) -> Remedy:
        return {
            "name": "LowerRateOnDivergence",
            "hyperparameter": "learning_rate",
            "multiply_by": DIVERGENCE_RATE_FACTOR,
            "min": self.rates.floor,
            "when": {"diverged": ["rising", "spiking"]},
            "note": f"The run diverged: a learning rate {1 / DIVERGENCE_RATE_FACTOR:g} times lower, well below the "
            "rate it diverged at (halving it diverges again). More epochs would not help.",
        }

    @property
    def lower_rate_learned_nothing(self) -> Remedy:
        """A rate lowered after a job blew up, at which the next job learned nothing: still too high (decision 208)."""
        return {
            "name": "LowerRateLearnedNothing",
            "hyperparameter": "learning_rate",
            "multiply_by": DIVERGENCE_RATE_FACTOR,
            "min": self.rates.floor,
            "when": {"learned_nothing": True, "blew_up_at_a_higher_rate": True,
                     "spiked_above": OVERSHOOT_FACTOR, "spike_series": "loss"},
            "note": "A job of this run blew up at a higher rate, and at this lower one the loss jumped above its start "
            "and the network learned nothing: its steps still overshoot. A rate "
            f"{1 / DIVERGENCE_RATE_FACTOR:g} times lower; more epochs would not help.",
        }

    @property
    def clip_gradients_on_spikes(self) -> Remedy:
        return {
            "name": "ClipGradientsOnSpikes",
            "hyperparameter": "grad_clip",
            "times_typical_gradient_norm": CLIP_FACTOR,
            "when": {"diverged": "spiking", **CLIPPING_OFF},
            "note": f"Clipping the total gradient norm at {CLIP_FACTOR:g} times the size it kept before the "
            "spikes (measured in the job) bounds the steps those spikes take and leaves the usual steps whole (a "
            "recurrent network's gradient spikes when its state dynamics turn unstable); the rate is kept.",
        }

    @property
    def on_divergence(self) -> list[Remedy]:
        """Clipping for spikes, else a tenth of the rate."""
        return [self.clip_gradients_on_spikes, self.lower_rate_on_divergence]

    # ----- the network

    @property
    def add_batch_norm(self) -> Remedy:
        return {"name": "AddBatchNorm", "hyperparameter": "add_batch_norm", "set_to": True, "also": [self.cap_warmup]}

    @property
    def clip_gradients(self) -> Remedy:
        return {"name": "ClipGradients", "hyperparameter": "grad_clip", "times_typical_gradient_norm": CLIP_FACTOR,
                "when": CLIPPING_OFF}

    @property
    def normalize_inputs(self) -> Remedy:
        """Names its cause (raw inputs), so it answers a quiet miss the training labels seem to explain too."""
        return {
            "name": "NormalizeInputs",
            "hyperparameter": "normalize_inputs",
            "set_to": True,
            "when": {"hyperparameters": {"normalize_inputs": False}},
            "note": "Inputs in their raw units give some features weights thousands of times too large or small for "
            "one learning rate to train.",
        }

    @property
    def switch_to_relu(self) -> Remedy:
        return {
            "name": "SwitchToReLU",
            "hyperparameter": "activation",
            "set_to": "relu",
            "when": {"hyperparameters": {"activation": "sigmoid"}},
            "note": "Sigmoid's derivative is at most 0.25, so gradients shrink layer by layer; ReLU passes them whole.",
        }

    @property
    def switch_to_leaky_relu(self) -> Remedy:
        return {
            "name": "SwitchToLeakyReLU",
            "hyperparameter": "activation",
            "set_to": "leaky_relu",
            "when": {"hyperparameters": {"activation": "relu"}},
            "note": "A ReLU unit whose input stays negative passes no gradient and never recovers; leaky ReLU keeps a "
            "small slope there.",
        }

    @property
    def rescale_initialisation(self) -> Remedy:
        return {
            "name": "RescaleInitialisation",
            "hyperparameter": "init_scale",
            "set_to": 1.0,
            "note": "Initial weights at the usual He/Xavier scale keep activations and gradients of order one.",
        }

    @property
    def rescale_small_initialisation(self) -> Remedy:
        """An initialisation far below the usual scale: the first suspect, rescaled before layers are added."""
        return {
            **self.rescale_initialisation,
            "when": {"hyperparameters_below": {"init_scale": 1 / FAR_INIT_SCALE}},
            "note": f"Initial weights below 1/{FAR_INIT_SCALE:g} of the usual scale shrink activations and gradients "
            "layer by layer.",
        }

    @property
    def rescale_large_initialisation(self) -> Remedy:
        return {
            **self.rescale_initialisation,
            "when": {"hyperparameters_above": {"init_scale": FAR_INIT_SCALE}},
            "note": f"Initial weights over {FAR_INIT_SCALE:g} times the usual scale blow activations and gradients up "
            "layer by layer.",
        }

    def _rescaled_with_relu(self, rescale: Remedy) -> Remedy:
        """A sigmoid stack at a far initialisation scale has two causes: both fixed in one launch."""
        return {
            **rescale,
            "name": "RescaleAndSwitchToReLU",
            "when": {**rescale["when"], "hyperparameters": {"activation": "sigmoid"}},
            "also": [{"hyperparameter": "activation", "set_to": "relu"}],
            "note": f"{rescale['note']} {self.switch_to_relu['note']}",
        }

    @property
    def rescale_small_initialisation_and_switch_to_relu(self) -> Remedy:
        return self._rescaled_with_relu(self.rescale_small_initialisation)

    @property
    def rescale_large_initialisation_and_switch_to_relu(self) -> Remedy:
        return self._rescaled_with_relu(self.rescale_large_initialisation)

    @property
    def stalling_settings(self) -> list[Remedy]:
        """Settings known to slow or stall training, whatever the loss did: fixed before anything is added."""
        return [
            self.rescale_small_initialisation_and_switch_to_relu,
            self.rescale_large_initialisation_and_switch_to_relu,
            self.switch_to_relu,
            self.rescale_small_initialisation,
            self.rescale_large_initialisation,
        ]

    # ----- regularisation and epochs

    @property
    def start_weight_decay(self) -> Remedy:
        """From none: multiplying zero changes nothing."""
        return {"name": "StartWeightDecay", "hyperparameter": "weight_decay", "at_least": MIN_WEIGHT_DECAY}

    @property
    def raise_weight_decay(self) -> Remedy:
        return {"name": "RaiseWeightDecay", "hyperparameter": "weight_decay", "multiply_by": 10, "max": MAX_WEIGHT_DECAY}

    @property
    def add_dropout(self) -> Remedy:
        return {"name": "AddDropout", "hyperparameter": "dropout", "set_to": OVERFIT_DROPOUT}

    @property
    def train_longer(self) -> Remedy:
        """More epochs, continuing from the checkpoints (each use says how many times more, and when)."""
        return {"name": "TrainLonger", "hyperparameter": "num_epochs", "max": MAX_EPOCHS, "resume": True}

    @property
    def stop_early_keep_best(self) -> Remedy:
        return {
            "name": "StopEarlyKeepBest",
            "hyperparameter": "early_stopping_patience",
            "set_to": EARLY_STOPPING_PATIENCE,
            "resume": True,
            "note": f"Stop after {EARLY_STOPPING_PATIENCE} epochs without a better validation loss and keep the best "
            "model.",
        }

    def regularise(self, when: dict[str, Any]) -> list[Remedy]:
        """A model that fits its training set and misses on held-out data, trained again from the start."""
        return [
            variant(self.start_weight_decay, when=when, resume=False,
                    note="The model fits its training set and misses on held-out data: L2 regularisation, trained "
                    "again from the start."),
            variant(self.add_dropout, when=when, resume=False,
                    note="Dropout regularises a model that fits its training set, trained again from the start."),
            variant(self.raise_weight_decay, when=when, resume=False,
                    note="Stronger L2 regularisation narrows the gap to the held-out data, trained again from the "
                    "start."),
        ]  # fmt: skip

    @property
    def weight_classes(self) -> Remedy:
        """The script's own class-weighting knob."""
        return {
            "name": "WeightClasses",
            "hyperparameter": "class_weighting",
            "set_to": "balanced",
            "note": "Weighting the loss by inverse class frequency makes the rare classes count as much as the common "
            "ones.",
        }

    # ----- the debugger's changes to the training loss (allowed only with the user's consent)

    @property
    def robust_loss_in_job(self) -> Remedy:
        return {
            "name": "RobustLossInJob",
            "debugger_setting": "robust_loss",
            "set_to": "generalized_cross_entropy",
            "when": {"training_labels": ["noisy", "memorised"]},
            "note": "The next job's debugger trains the script on the generalized cross-entropy (Zhang and Sabuncu, "
            "NeurIPS 2018, q=0.7) in place of its cross-entropy: a sample whose label the model finds unlikely, as "
            "most wrong labels are once the right ones are learnt, pulls the weights less; evaluation keeps the plain "
            "loss.",
        }

    @property
    def robust_loss_past_peak(self) -> Remedy:
        return {
            **self.robust_loss_in_job,
            "name": "RobustLossPastPeak",
            "when": {"objective_past_peak": True},
            "note": "Learning what does not carry over to held-out data is what wrong training labels make a model "
            "do, and no other remedy is left: the next job's debugger trains on the generalized cross-entropy, a loss "
            "robust to wrong labels; evaluation keeps the plain loss.",
        }

    @property
    def robust_loss_on_short_match(self) -> Remedy:
        return {
            **self.robust_loss_in_job,
            "name": "RobustLossOnShortMatch",
            "when": {"labels_short_of_held_out": True},
            "note": "Wrong training labels are the likeliest cause left, and no other remedy is left: the next job's "
            "debugger trains on the generalized cross-entropy, a loss robust to wrong labels; evaluation keeps the "
            "plain loss.",
        }

    @property
    def weight_classes_in_job(self) -> Remedy:
        return {
            "name": "WeightClassesInJob",
            "debugger_setting": "class_weighting",
            "set_to": "balanced",
            "when": {"training_labels": "imbalanced", "loss_weighted_by_class": False},
            "note": "The next job's debugger weights the script's training loss by class: each class's cross-entropy "
            "by the inverse of its share of the training labels, as scikit-learn's \"balanced\" does; evaluation "
            "keeps the plain loss.",
        }

    @property
    def adjust_logits_in_job(self) -> Remedy:
        return {
            "name": "AdjustLogitsInJob",
            "debugger_setting": "class_weighting",
            "set_to": "logit_adjusted",
            "when": {"training_labels": "imbalanced", "debugger_settings_tried": {"class_weighting": "balanced"}},
            "note": "Weighting the classes did not reach the objective, so the next job's debugger trains the script "
            "on the logit-adjusted cross-entropy (Menon et al., ICLR 2021): each class's score is raised by the log "
            "of its share of the training labels before the loss, so the rare class must win by a wider margin, and "
            "no sample's step is scaled up; evaluation keeps the plain loss.",
        }
