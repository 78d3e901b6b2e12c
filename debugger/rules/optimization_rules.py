"""SageMaker Debugger's built-in rules on whether training optimizes (ExplodingTensor, VanishingGradient,
LossNotDecreasing, WeightUpdateRatio, PoorWeightInitialization), with the parameters and defaults of the AWS developer guide
(``contracts.debugger_config.BUILTIN_RULE_DEFAULTS``), evaluated in the job on every step.

Cheap every-step signals (loss, total gradient norm) count as tensors of their collections, so an
explosion is caught at the step it happens whatever the save interval; full tensors only at saved steps.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from contracts.objective import Objective
from contracts.rule_status import NAN_INPUT
from debugger.core.collection import ACTIVATIONS, GRADIENTS, LOSSES, WEIGHTS
from debugger.core.modes import ModeKeys
from debugger.rules import rule_checks
from debugger.rules.rule import GRADIENT_PREFIX, TOTAL_GRADIENT_NORM, Requirement, Rule
from debugger.rules.run_objective import objective_met
from debugger.rules.tensor_selection import LossFall
from debugger.rules.tensor_selection import Selection as _Selection
from debugger.rules.tensor_selection import first_value as _first_value
from debugger.trial.trial import BaseTrial


def _nonfinite_model_inputs(trial: BaseTrial, step: int) -> int:
    """NaN or infinite values in the model's own input at ``step`` (held by the in-job trial, read only when a rule has
    already fired): evidence that the data, not the training, is wrong."""
    inputs = trial.model_inputs(step) if hasattr(trial, "model_inputs") else {}
    count = 0
    for value in inputs.values():
        array = value.float().cpu().numpy() if hasattr(value, "detach") and value.is_floating_point() else np.asarray(value)
        if array.dtype.kind == "f":
            count += int((~np.isfinite(array)).sum())
    return count


def _exploding_order(name: str) -> int:
    """Report the culprit, not the aggregate: per-parameter gradients first, derived scalars last."""
    if name.startswith(GRADIENT_PREFIX):
        return 0
    return 2 if name == TOTAL_GRADIENT_NORM else 1


class ExplodingTensor(Rule):
    """Fires on any NaN (or, unless only_nan, infinite) value in the selected tensors."""

    def __init__(self, base_trial, collection_names: list[str] | None = None, tensor_regex=(), only_nan: bool = False):
        super().__init__(base_trial)
        self.collection_names = list(collection_names or [])
        self.only_nan = only_nan
        self._selection = _Selection(base_trial, self.collection_names, tuple(tensor_regex), order=_exploding_order)

    def requirements(self) -> list[Requirement]:
        return [Requirement(collection) for collection in self.collection_names]

    def invoke_at_step(self, step: int) -> bool:
        # In the job: a tensor whose L2 norm is finite holds no NaN or infinity, so only the others are read
        # (a finite tensor can still overflow the norm: then it is read and checked value by value).
        norms = self.base_trial.norms(step, 2) if hasattr(self.base_trial, "norms") else {}
        finite = {name for name, norm in norms.items() if math.isfinite(norm)}
        for name, value in self._selection.values_at(step, skip=finite.__contains__):
            values = np.asarray(value)
            bad = np.isnan(values) if self.only_nan else ~np.isfinite(values)
            if bad.any():
                offending = float(values[bad].reshape(-1)[0])
                kind = "NaN" if self.only_nan else "NaN or infinite"
                message = f"{int(bad.sum())} {kind} value(s) in {name} at step {step}"
                inputs = _nonfinite_model_inputs(self.base_trial, step)
                if inputs:
                    # The model was fed NaN or infinity: no hyperparameter can fix that, the data must be.
                    message += f"; the model's input at that step held {inputs} NaN or infinite value(s): the data is wrong"
                self.report(name, offending, message)
                if inputs:
                    self.finding.kind = NAN_INPUT
                return True
        return False


#: VanishingGradient scales its threshold by the step's own training loss, else by the mean of this many recent ones.
LOSS_SCALE_STEPS = 10


class VanishingGradient(Rule):
    """Fires when the mean of |gradient| of a gradient tensor falls below ``threshold``, judged at the scale of the
    loss the gradients carry.

    ``total_gradient_norm`` (every step) counts too: below the threshold it implies every gradient's mean
    |g| is below it. Tensors that cannot carry a gradient (frozen parameters, a bias a normalization removes:
    :mod:`debugger.rules.tensor_signal`) are skipped. A gradient is as large as the loss it carries: once training has
    brought the loss down by a factor (the step's training loss against the first), the threshold is divided by
    that factor (:class:`debugger.rules.tensor_selection.LossFall`), so a model that has fit its data (a healthy CNN's loss at 7e-6 and its first layer's
    mean |g| at 3e-8, accuracy 1.0) is not taken for one whose gradient died on its way to the first layers.
    SageMaker's rule compares with ``threshold`` alone."""

    def __init__(self, base_trial, threshold: float = 1e-7):
        super().__init__(base_trial)
        self.threshold = threshold
        # a frozen parameter or a bias a normalization removes has no gradient to speak of, by construction
        self._selection = _Selection(base_trial, [GRADIENTS], (), skip_silent=True)
        self._loss_fall = LossFall(base_trial, LOSS_SCALE_STEPS)

    def requirements(self) -> list[Requirement]:
        return [Requirement(GRADIENTS)]

    def invoke_at_step(self, step: int) -> bool:
        fall = self._loss_fall.at(step)
        threshold = self.threshold / fall
        # In the job: mean |g| = ||g||_1 / n >= ||g||_2 / n, and the L2 norms come from one fused torch call per
        # step; only a tensor whose L2 norm over its size falls below the threshold is read and checked exactly.
        norms = self.base_trial.norms(step, 2) if hasattr(self.base_trial, "norms") else {}
        clear = {
            name for name, norm in norms.items() if math.isfinite(norm) and norm / self.base_trial.numel(step, name) >= threshold
        }
        for name, value in self._selection.values_at(step, skip=clear.__contains__):
            mean_abs = float(np.mean(np.abs(np.asarray(value, dtype=np.float64))))
            if mean_abs < threshold:
                scaled = f" / {fall:.3g} ({self._loss_fall.describe()})" if fall > 1.0 else ""
                self.report(name, mean_abs, f"mean |gradient| of {name} is {mean_abs:.3g} < threshold {self.threshold:g}{scaled}")
                return True
        return False


#: LossNotDecreasing measures the loss's noise over this many windows of num_steps (the two it compares and the
#: ones before): a longer record of the same run's noise, as it is now.
NOISE_WINDOWS = 4
#: The order LossNotDecreasing picks a mode in when none is given (AWS developer guide).
AUTO_MODES = (ModeKeys.EVAL, ModeKeys.TRAIN, ModeKeys.GLOBAL)


@dataclasses.dataclass
class _LossSeries:
    """One loss tensor's points in the judged mode: (mode step, loss). In EVAL mode a point is an evaluation
    pass's mean (its steps in a row); otherwise every step's loss."""

    points: list[tuple[int, float]] = dataclasses.field(default_factory=list)
    open_phase: list[tuple[int, float]] = dataclasses.field(default_factory=list)
    last_check: int | None = None
    first_step: int | None = None
    #: the lowest window mean judged so far, with its number of losses (the level a rise is measured from)
    lowest: tuple[float, int] | None = None
    #: the first window mean judged (where the descent a rise is weighed against began), with its number of losses
    first_mean: float | None = None
    first_count: int = 0
    #: how many times the curve was judged
    checks: int = 0


#: A rise from the lowest window mean must also undo more than this share of the descent before it. A loss near zero
#: after a long fall is heavy-tailed: a few hard minibatches of a 20-step window took a healthy SGD run's mean from
#: 0.031 to 0.069 (124%, past 5% plus 3.5 standard errors) at the same steps at every learning rate, 5% of its fall
#: from 0.77 (the random repair zoo's seed 1005, configuration 12's healthy twin: held-out accuracy 0.92). A rate
#: that overshoots takes back a large share of the descent, and all of it when the run diverges.
RISE_SHARE_OF_DESCENT = 0.1

#: A loss that, over at least STAGNANT_STEPS mode steps and STAGNANT_CHECKS judgements, has not fallen below its first
#: window's mean by more than the noise of the two means, nor by STAGNANT_FALL_PERCENT of it, is reported "stagnant",
#: whatever its last two windows did. The window-to-window test alone never fires on a loss that does not move at
#: all: one window's mean is below the one before about half the time (the random repair zoo's frozen updates, a rate
#: x1e-5, trained all 12 epochs unreported; tests/debugger/rules/trajectories/smd_digits_frozen: 2.34 -> 2.34). A
#: slow start is not stagnant: a 3x64 sigmoid stack's loss fell 4.5% in 80 steps, within the noise of windows of 10,
#: and went on to meet its objective (logline_digits_sigmoid); a healthy run's loss leaves its first window's noise
#: within a few windows (the healthy corpus).
STAGNANT_STEPS = 80
STAGNANT_CHECKS = 3
STAGNANT_FALL_PERCENT = 2.0


class LossNotDecreasing(Rule):
    """Judges the loss on windows of ``num_steps`` mode steps, checking at most every ``num_steps`` once two
    windows are full: fires "rising" when the mean of the latest window is above the lowest window mean of the run
    by more than ``increase_threshold_percent`` percent plus the noise of the means, "flat" when it fell from the
    previous window's mean by less than ``diff_percent`` percent (with 0: not at all). In EVAL mode each evaluation
    pass counts once, by its mean. ``mode`` picks the steps; by default EVAL once its curve spans two windows, else
    TRAIN, else GLOBAL (SageMaker's: EVAL as soon as there is an evaluation step).

    SageMaker's rule compares two single losses ``num_steps`` apart; one minibatch's loss is noisy (measured: a
    healthy run's loss rose 44.7% between two saved steps), so the product compares window means, and a rise must
    clear :data:`debugger.rules.rule_checks.NOISE_STANDARD_ERRORS` standard errors of the noise measured on the same
    run's latest losses (:func:`debugger.rules.rule_checks.noise_sigma`, over :data:`NOISE_WINDOWS` windows). Measured
    from the run's lowest window, a rise that builds up over several windows counts in full. With an ``objective``
    (the workflow's parameter) a run whose latest metric meets it is not reported: a converged run sits on a
    plateau; the status's details say what was seen."""

    def __init__(
        self,
        base_trial,
        collection_names: list[str] | None = None,
        tensor_regex=(),
        use_losses_collection: bool = True,
        num_steps: int = 10,
        diff_percent: float = 0.0,
        increase_threshold_percent: float = 5.0,
        mode: str = "",
        objective: Objective | None = None,
    ):
        super().__init__(base_trial)
        self.num_steps = num_steps
        self.diff_percent = diff_percent
        self.increase_threshold_percent = increase_threshold_percent
        self.mode = ModeKeys[mode] if mode else None
        self.objective = objective
        collections = list(collection_names or []) + ([LOSSES] if use_losses_collection else [])
        self._needs_selection = bool(collections or tensor_regex)
        self._selection = _Selection(base_trial, collections, tuple(tensor_regex))
        self._series: dict[str, _LossSeries] = {}
        self._modes_seen: set[ModeKeys] = set()

    def requirements(self) -> list[Requirement]:
        return [Requirement(LOSSES)]

    def _judgeable(self, mode: ModeKeys) -> bool:
        """Whether a loss of ``mode`` has two full windows of points: a curve that can be judged."""
        return any(
            key[1] is mode and series.first_step is not None and series.points
            and series.first_step <= series.points[-1][0] - 2 * self.num_steps + 1
            for key, series in self._series.items()
        )

    def _chosen_mode(self) -> ModeKeys:
        """The given mode; by default EVAL once its curve can be judged (evaluation passes over two windows), else
        TRAIN, else GLOBAL: a script that evaluates once an epoch would otherwise leave its first 2 * num_steps
        epochs unwatched, since its training steps no longer count once an evaluation step exists."""
        if self.mode is not None:
            return self.mode
        if ModeKeys.EVAL in self._modes_seen and self._judgeable(ModeKeys.EVAL):
            return ModeKeys.EVAL
        return next((mode for mode in AUTO_MODES[1:] if mode in self._modes_seen), ModeKeys.GLOBAL)

    def invoke_at_step(self, step: int) -> bool:
        if not self._needs_selection:
            return False
        mode, mode_step = self.base_trial._global_to_mode.get(step, (ModeKeys.GLOBAL, step))
        self._modes_seen.add(mode)
        fired = False
        if mode is not ModeKeys.EVAL:
            # an evaluation pass ended: its mean is one point of the evaluation curve
            for key, series in self._series.items():
                fired = fired or (key[1] is ModeKeys.EVAL and self._close_phase(key[0], series))
        if fired:
            return True
        for name, value in self._selection.values_at(step):
            loss = _first_value(value)
            if not math.isfinite(loss):
                continue
            series = self._series.setdefault((name, mode), _LossSeries())
            if mode is ModeKeys.EVAL:
                series.open_phase.append((mode_step, loss))
            elif mode is not ModeKeys.PREDICT and self._add_point(name, mode, series, mode_step, loss):
                return True
        return False

    def _close_phase(self, name: str, series: _LossSeries) -> bool:
        if not series.open_phase:
            return False
        last_step = series.open_phase[-1][0]
        mean = float(np.mean([loss for _, loss in series.open_phase]))
        series.open_phase = []
        return self._add_point(name, ModeKeys.EVAL, series, last_step, mean)

    def _add_point(self, name: str, mode: ModeKeys, series: _LossSeries, mode_step: int, loss: float) -> bool:
        """Add a point to the curve of ``mode``; judge the curve if it is the one the rule watches now."""
        series.points.append((mode_step, loss))
        if series.first_step is None:
            series.first_step = mode_step
        window = self.num_steps
        # keep the windows the noise is measured on: older points are neither compared nor measured
        while series.points and series.points[0][0] <= mode_step - NOISE_WINDOWS * window:
            series.points.pop(0)
        if mode is not self._chosen_mode():
            return False
        if series.last_check is not None and mode_step - series.last_check < window:
            return False
        if series.first_step > mode_step - 2 * window + 1:
            return False  # the previous window is not full yet
        previous = [loss for step, loss in series.points if mode_step - 2 * window < step <= mode_step - window]
        current = [loss for step, loss in series.points if step > mode_step - window]
        if not previous or not current:
            return False
        series.last_check = mode_step
        return self._judge(name, series, mode_step, previous, current)

    def _judge(self, name: str, series: _LossSeries, mode_step: int, previous: list[float], current: list[float]) -> bool:
        sigma = rule_checks.noise_sigma([loss for _, loss in series.points])
        before, after = float(np.mean(previous)), float(np.mean(current))
        if series.first_mean is None:
            series.first_mean, series.first_count = before, len(previous)
        series.checks += 1
        for mean, count in ((before, len(previous)), (after, len(current))):
            if series.lowest is None or mean < series.lowest[0]:
                series.lowest = (mean, count)
        span = f"(the {self.num_steps} steps to step {mode_step})"
        if after > series.lowest[0]:
            finding = self._rising(series.lowest, series.first_mean, after, len(current), sigma, span)
        elif after <= before:
            finding = self._flat(before, after, len(previous), len(current), span)
        else:
            finding = None
        if finding is None:
            finding = self._stagnant(series, mode_step, after, len(current), sigma, span)
        if finding is None:
            return False
        kind, message = finding
        met, value = objective_met(self.base_trial, self.objective)
        if met:
            # the run is already good enough: a converged run sits on a plateau, and a held-out loss that creeps up
            # while the objective's metric holds is not a failure (if the metric falls, the next check reports it)
            self.note(f"{message}; but the run meets its objective ({self.objective.describe()}: {value:.4g})")
            return False
        self.report(name, after, message)
        self.finding.kind = kind  # RuleIssue.kind, as contracts.rule_status documents it
        return True

    def _rising(self, lowest: tuple[float, int], first: float, after: float, count: int, sigma: float, span: str):
        """("rising", why) when the latest window's mean is above the lowest window mean of the run by more than
        increase_threshold_percent plus the noise, and by more than RISE_SHARE_OF_DESCENT of the run's descent to that
        lowest mean: a rise that builds up over several windows counts in full."""
        low, low_count = lowest
        scale = abs(low) or 1.0
        allowance = rule_checks.NOISE_STANDARD_ERRORS * rule_checks.mean_difference_error(sigma, low_count, count)
        increase = (after - low) / scale * 100.0
        if increase <= self.increase_threshold_percent + allowance / scale * 100.0:
            return None
        if first > low and after - low <= RISE_SHARE_OF_DESCENT * (first - low):
            return None  # a few hard minibatches near the bottom of a long descent, not a loss going back up
        return "rising", (
            f"loss rose {increase:.3g}% from its lowest mean {low:.6g} (over {low_count} loss(es)) to {after:.6g} over "
            f"{count} {span}; allowed increase {self.increase_threshold_percent:g}% plus the noise ({allowance:.3g})"
        )

    def _stagnant(self, series: _LossSeries, mode_step: int, after: float, count: int, sigma: float, span: str):
        """("stagnant", why) when, over STAGNANT_STEPS mode steps and STAGNANT_CHECKS judgements, the latest window's
        mean is not below the first window's by more than the noise of the two means nor by STAGNANT_FALL_PERCENT."""
        if series.first_mean is None or series.checks < STAGNANT_CHECKS:
            return None
        if series.first_step is None or mode_step - series.first_step + 1 < STAGNANT_STEPS:
            return None
        first = series.first_mean
        allowance = rule_checks.NOISE_STANDARD_ERRORS * rule_checks.mean_difference_error(sigma, series.first_count, count)
        fall = first - after
        fall_percent = fall / (abs(first) or 1.0) * 100.0
        if fall > allowance or fall_percent >= STAGNANT_FALL_PERCENT:
            return None
        return "stagnant", (
            f"loss has not fallen since its first judged window: mean {first:.6g} (over {series.first_count} "
            f"loss(es)) then {after:.6g} over {count} {span}, {mode_step - series.first_step + 1} steps in; a fall "
            f"under {STAGNANT_FALL_PERCENT:g}% or within the noise ({allowance:.3g}) does not count"
        )

    def _flat(self, before: float, after: float, before_count: int, count: int, span: str):
        """("flat", why) when the latest window's mean fell from the previous one's by less than diff_percent (with
        diff_percent 0: not at all). The means, not single losses: a window's mean holds little of the noise, and
        a run asked to fall diff_percent a window that does not is what the user set the rule to catch (a run
        that already meets its objective is spared, by _judge)."""
        scale = abs(before) or 1.0
        decrease = (before - after) / scale * 100.0
        if not (decrease == 0.0 if self.diff_percent == 0.0 else decrease < self.diff_percent):
            return None
        return "flat", (
            f"loss fell only {decrease:.3g}% from a mean of {before:.6g} over {before_count} loss(es) to {after:.6g} over "
            f"{count} {span}; required more than {self.diff_percent:g}%"
        )


class WeightUpdateRatio(Rule):
    """Fires when ||w_s - w_p|| / (||w_p|| + epsilon) exceeds ``large_threshold`` or falls below
    ``small_threshold``; ``p`` is the previous saved step of the weight (with ``num_steps``: only when it lies
    at most ``num_steps`` back). Runs on TRAIN steps when there are any, else on GLOBAL steps."""

    def __init__(self, base_trial, num_steps: int | None = None, large_threshold: float = 10.0, small_threshold: float = 1e-8, epsilon: float = 1e-9):
        super().__init__(base_trial)
        self.num_steps = num_steps
        self.large_threshold = large_threshold
        self.small_threshold = small_threshold
        self.epsilon = epsilon
        self._selection = _Selection(base_trial, [WEIGHTS], (), skip_silent=True)
        self._previous: dict[str, tuple[int, np.ndarray]] = {}

    def requirements(self) -> list[Requirement]:
        # with num_steps the rule compares weights at most num_steps apart: the AWS guide has the user set
        # train.save_interval to num_steps; we save them that often, so a sparser save interval cannot disable it
        return [Requirement(WEIGHTS, every=self.num_steps)]

    def invoke_at_step(self, step: int) -> bool:
        mode, mode_step = self.base_trial._global_to_mode.get(step, (ModeKeys.GLOBAL, step))
        train_seen = ModeKeys.TRAIN in {m for m, _ in self.base_trial._global_to_mode.values()}
        if mode is not (ModeKeys.TRAIN if train_seen else ModeKeys.GLOBAL):
            return False
        for name, value in self._selection.values_at(step):
            weights = np.asarray(value, dtype=np.float64)
            previous = self._previous.get(name)
            self._previous[name] = (mode_step, weights.copy())
            if previous is None or previous[0] == mode_step:
                continue
            if self.num_steps is not None and mode_step - previous[0] > self.num_steps:
                continue
            ratio = float(np.linalg.norm(weights - previous[1]) / (np.linalg.norm(previous[1]) + self.epsilon))
            if ratio > self.large_threshold or ratio < self.small_threshold:
                bound = "above large_threshold" if ratio > self.large_threshold else "below small_threshold"
                self.report(name, ratio, f"update/weight ratio of {name} from step {previous[0]} to {mode_step} is {ratio:.3g}, {bound}")
                self.finding.kind = "too_large" if ratio > self.large_threshold else "too_small"  # the remedies key on it
                return True
        return False


#: PoorWeightInitialization's loss criterion: a loss "does not move" when its values stay within this fraction of their
#: mean (the first 10 losses of healthy runs spread 2% to 400% of their mean: bench/healthy_corpus.py).
LOSS_STILL = 0.01
#: PoorWeightInitialization's gradient spread counts as narrow below this fraction of the gradient's mean |g|
#: (healthy layers measured 2-6 times their mean |g| at steps 0-9: bench/healthy_corpus.py).
NARROW_SPREAD = 0.1


class PoorWeightInitialization(Rule):
    """In the first ``steps`` steps: activation-input variances across layers differ by more than ``threshold``x,
    the 5th-95th percentile spread of a gradient is below ``distribution_range``, or the loss makes no new
    minimum for ``patience`` steps."""

    def __init__(
        self,
        base_trial,
        activation_inputs_regex=(),
        threshold: float = 10.0,
        distribution_range: float = 0.001,
        patience: int = 5,
        steps: int = 10,
    ):
        super().__init__(base_trial)
        self.threshold = threshold
        self.distribution_range = distribution_range
        self.patience = patience
        self.steps = steps
        regex = tuple(activation_inputs_regex) or (re.compile(".*relu_input"),)
        self._activations = _Selection(base_trial, [], regex)
        self._gradients = _Selection(base_trial, [GRADIENTS], (), skip_silent=True)
        self._losses = _Selection(base_trial, [LOSSES], ())
        self._best_loss: float | None = None
        self._best_step = 0
        self._seen_losses: list[float] = []

    def requirements(self) -> list[Requirement]:
        window = frozenset(range(self.steps))
        return [Requirement(ACTIVATIONS, window, self._activations.regex), Requirement(GRADIENTS, window)]

    def invoke_at_step(self, step: int) -> bool:
        if step >= self.steps:
            return False
        return self._activation_variance(step) or self._gradient_spread(step) or self._loss_stalled(step)

    def _activation_variance(self, step: int) -> bool:
        variances = {}
        for name in self._activations.names():
            tensor = self.base_trial.tensor(name)
            if tensor.has_step(step):
                variances[name] = float(np.var(np.asarray(tensor.value(step), dtype=np.float64)))
        if len(variances) < 2:
            return False
        smallest = min(variances, key=variances.get)
        largest = max(variances, key=variances.get)
        ratio = math.inf if variances[smallest] == 0 else variances[largest] / variances[smallest]
        if ratio > self.threshold:
            self.report(
                largest,
                ratio,
                f"activation-input variance ratio across layers is {ratio:.3g} (max {largest}, min {smallest}) "
                f"> threshold {self.threshold:g}",
            )
            return True
        return False

    def _gradient_spread(self, step: int) -> bool:
        for name, value in self._gradients.values_at(step):
            if name == TOTAL_GRADIENT_NORM:
                continue
            values = np.asarray(value, dtype=np.float64).reshape(-1)
            if values.size < 2 or not np.isfinite(values).all():
                continue
            low, high = np.percentile(values, [5, 95])
            scale = float(np.mean(np.abs(values)))
            # narrow, not merely small: a small gradient (a sigmoid network's first layer: spread 7e-4, 4x its mean
            # |g|) spreads as widely for its size as any; a gradient whose entries all agree (units that start
            # alike) or that is all zero does not
            if high - low < self.distribution_range and (scale == 0.0 or high - low < NARROW_SPREAD * scale):
                self.report(
                    name,
                    high - low,
                    f"5th-95th percentile spread of {name} is {high - low:.3g} < {self.distribution_range:g}, "
                    f"{(high - low) / scale if scale else 0.0:.3g} times its mean |gradient| {scale:.3g}",
                )
                return True
        return False

    def _loss_stalled(self, step: int) -> bool:
        """No new minimum for ``patience`` steps (SageMaker's test), and the loss does not move: the mean of the
        latest ``patience`` losses is not below the mean of the ``patience`` before them, and all the losses seen
        lie within LOSS_STILL of their mean. Minibatch noise alone makes a slow start miss a new minimum for 5
        steps (3 of 27 healthy runs of the corpus); a loss frozen by the initialisation does not move at all."""
        for name, value in self._losses.values_at(step):
            loss = _first_value(value)
            if not math.isfinite(loss):
                continue
            self._seen_losses.append(loss)
            if self._best_loss is None or loss < self._best_loss:
                self._best_loss, self._best_step = loss, step
                return False
            if step - self._best_step < self.patience or len(self._seen_losses) < 2 * self.patience:
                return False
            latest = float(np.mean(self._seen_losses[-self.patience :]))
            before = float(np.mean(self._seen_losses[-2 * self.patience : -self.patience]))
            level = float(np.mean(self._seen_losses))
            spread = (max(self._seen_losses) - min(self._seen_losses)) / (abs(level) or 1.0)
            if latest < before or spread >= LOSS_STILL:
                return False
            self.report(
                name,
                loss,
                f"loss made no new minimum for {step - self._best_step} steps (best {self._best_loss:.6g}) and does not "
                f"move: its {len(self._seen_losses)} values lie within {spread:.2%} of their mean {level:.6g}",
            )
            return True
        return False


OPTIMIZATION_RULES: dict[str, type[Rule]] = {
    "ExplodingTensor": ExplodingTensor,
    "VanishingGradient": VanishingGradient,
    "LossNotDecreasing": LossNotDecreasing,
    "WeightUpdateRatio": WeightUpdateRatio,
    "PoorWeightInitialization": PoorWeightInitialization,
}
