"""SageMaker Debugger's LossNotDecreasing, judged on windows of the loss with the noise measured in the same run, and,
before a loss that has not fallen is called stagnant, on how far the weights moved (:mod:`debugger.rules.weight_movement`):
a frozen run and a slow start both sit at their first loss for a while, and only the weights tell them apart."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from contracts.divergence import LOSS_RISE_FACTOR
from contracts.objective import Objective
from contracts.rule_status import HELD_OUT_RISING
from debugger.core.collection import LOSSES, WEIGHTS
from debugger.core.modes import ModeKeys
from debugger.rules import rule_checks
from debugger.rules.rule import Requirement, Rule
from debugger.rules.run_objective import objective_met
from debugger.rules.tensor_selection import Selection as _Selection
from debugger.rules.tensor_selection import first_value as _first_value
from debugger.rules.weight_movement import WeightMovement

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
    #: the series' first loss (a job's first step: before any update), the level a divergence is measured from
    initial: float | None = None
    #: the lowest window mean judged so far, with its number of losses (the level a rise is measured from)
    lowest: tuple[float, int] | None = None
    #: the first window mean judged (where the descent a rise is weighed against began), with its number of losses
    first_mean: float | None = None
    first_count: int = 0
    #: how many times the curve was judged
    checks: int = 0
    #: an evaluation curve's points' companions: (mode step, the training loss's latest window mean when that
    #: evaluation pass ended), and that mean beside the lowest window (what a held-out rise is weighed against)
    training_beside: list[tuple[int, float]] = dataclasses.field(default_factory=list)
    training_at_lowest: float | None = None


#: A rise from the lowest window mean must also undo more than this share of the descent before it: a loss near zero
#: after a long fall is heavy-tailed, while a rate that overshoots takes back much of the descent (decision 017).
RISE_SHARE_OF_DESCENT = 0.1


def sustained_level(losses: list[float]) -> float:
    """The level a window's loss stayed at: the lower of the median of the whole window and of its latest half. A rise
    that holds lifts both; a spike the run recovered from lifts the window's mean through a few steps, but neither
    median unless it filled half the window and was still up at its end (decision 185)."""
    latest = losses[len(losses) // 2 :]
    return min(float(np.median(losses)), float(np.median(latest)))

#: A loss that, over at least STAGNANT_STEPS mode steps and STAGNANT_CHECKS judgements, has not fallen below its first
#: window's mean by more than the noise of the two means, nor by STAGNANT_FALL_PERCENT of it, is reported "stagnant",
#: whatever its last two windows did, when the weights say it cannot fall (debugger.rules.weight_movement: frozen, or
#: a matrix left behind); a slow start moves them all (decision 018).
STAGNANT_STEPS = 80
STAGNANT_CHECKS = 3
STAGNANT_FALL_PERCENT = 2.0
#: LossNotDecreasing asks for the weights every window up to this training step (its stagnant test first judges at
#: STAGNANT_STEPS; the product's default hook configuration saves them every 10 steps anyway).
WEIGHT_STEPS = 10 * STAGNANT_STEPS


def _mean_between(points: list[tuple[int, float]], after: int, until: int) -> float | None:
    """The mean of the points with ``after < step <= until``; None without any."""
    values = [value for step, value in points if after < step <= until]
    return float(np.mean(values)) if values else None


class LossNotDecreasing(Rule):
    """Judges the loss on windows of ``num_steps`` mode steps, checking at most every ``num_steps`` once two
    windows are full: fires "rising" when the mean of the latest window is above the lowest window mean of the run
    by more than ``increase_threshold_percent`` percent plus the noise of the means (HELD_OUT_RISING when that
    curve is the evaluation loss and the training loss fell since its lowest window: a model that overfits), "flat"
    when it fell from the previous window's mean by less than ``diff_percent`` percent (with 0: not at all),
    "stagnant" when it has not left its first window's level in STAGNANT_STEPS steps and the weights show it cannot
    (they do not move, or a weight matrix is left behind: :mod:`debugger.rules.weight_movement`). In EVAL mode each
    evaluation pass counts once, by its mean. ``mode`` picks the steps; by default EVAL once its curve spans two
    windows, else TRAIN, else GLOBAL (SageMaker's: EVAL as soon as there is an evaluation step).

    SageMaker's rule compares two single losses ``num_steps`` apart; one minibatch's loss is noisy (decision 017), so
    the product compares window means, and a rise must
    clear :data:`debugger.rules.rule_checks.NOISE_STANDARD_ERRORS` standard errors of the noise measured on the same
    run's latest losses (:func:`debugger.rules.rule_checks.noise_sigma`, over :data:`NOISE_WINDOWS` windows). Measured
    from the run's lowest window, a rise that builds up over several windows counts in full. With an ``objective``
    (the workflow's parameter) a run whose latest metric meets it is not reported: a converged run sits on a
    plateau; the status's details say what was seen. A loss that has not fallen because it rose to
    contracts.divergence.LOSS_RISE_FACTOR times its first value, beyond the noise, is "rising" (diverged), never
    "flat" or "stagnant" (decision 165)."""

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
        self._movement = WeightMovement(base_trial)
        self._step = 0  # the global step judged now: where the message's span ends

    def requirements(self) -> list[Requirement]:
        # the weights tell a loss that cannot fall from one that has not fallen yet (_stagnant): saved every window,
        # whatever the save interval, over the first WEIGHT_STEPS training steps (a large model saved that often
        # all job long would cost more than the judgement; a later judgement reads how far they moved by then)
        return [Requirement(LOSSES), Requirement(WEIGHTS, every=self.num_steps, until=WEIGHT_STEPS)]

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
        self._step = step  # the span's end, as the message names it
        self._modes_seen.add(mode)
        if mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL):
            self._movement.observe(step, mode_step)
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
        training = self._series.get((name, ModeKeys.TRAIN))
        if training is not None and training.points:
            latest = [loss for _, loss in training.points[-self.num_steps :]]
            series.training_beside.append((last_step, float(np.mean(latest))))
            self._keep_noise_windows(series.training_beside, last_step)
        return self._add_point(name, ModeKeys.EVAL, series, last_step, mean)

    def _keep_noise_windows(self, points: list[tuple[int, float]], mode_step: int) -> None:
        """Keep the windows the noise is measured on: older points are neither compared nor measured."""
        while points and points[0][0] <= mode_step - NOISE_WINDOWS * self.num_steps:
            points.pop(0)

    def _add_point(self, name: str, mode: ModeKeys, series: _LossSeries, mode_step: int, loss: float) -> bool:
        """Add a point to the curve of ``mode``; judge the curve if it is the one the rule watches now."""
        series.points.append((mode_step, loss))
        if series.first_step is None:
            series.first_step, series.initial = mode_step, loss
        window = self.num_steps
        self._keep_noise_windows(series.points, mode_step)
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
        window = self.num_steps
        training_before = _mean_between(series.training_beside, mode_step - 2 * window, mode_step - window)
        training_after = _mean_between(series.training_beside, mode_step - window, mode_step)
        for mean, count, training in ((before, len(previous), training_before), (after, len(current), training_after)):
            if series.lowest is None or mean < series.lowest[0]:
                series.lowest, series.training_at_lowest = (mean, count), training
        span = f"(the {self.num_steps} steps to {self.step_name(self._step)})"
        if after > series.lowest[0]:
            finding = self._rising(series.lowest, series.first_mean, after, len(current), sigma, span)
            if finding is not None and self._rising(
                series.lowest, series.first_mean, sustained_level(current), len(current), sigma, span
            ) is None:
                self.note(f"{finding[1]}; but {self._excursion(current, series.lowest[0])}")
                finding = None
            if finding is not None and None not in (series.training_at_lowest, training_after) and (
                training_after < series.training_at_lowest
            ):
                finding = HELD_OUT_RISING, (
                    f"held-out {finding[1]}, while the training loss fell from {series.training_at_lowest:.4g} to "
                    f"{training_after:.4g}: the model fits what does not carry over to held-out data"
                )
        elif after <= before:
            finding = self._flat(before, after, len(previous), len(current), span)
        else:
            finding = None
        if finding is None:
            finding = self._stagnant(series, mode_step, after, len(current), sigma, span)
        if finding is None or finding[0] in ("flat", "stagnant"):
            # a loss that has not fallen because it rose is a divergence, not a loss that never learned
            finding = self._diverged(series.initial, current, span) or finding
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

    @staticmethod
    def _excursion(current: list[float], low: float) -> str:
        """Why a window whose mean rose is not a rise: its losses came back (the user-facing words of decision 185)."""
        peak = max(current)
        return (
            f"the loss spiked to {peak:.4g} and came back: the window's median {float(np.median(current)):.4g} and its "
            f"latest half's {float(np.median(current[len(current) // 2 :])):.4g} stayed within the allowed rise from the lowest "
            f"mean {low:.4g}: an excursion the run recovered from, not a sustained rise"
        )

    @staticmethod
    def _diverged(initial: float | None, current: list[float], span: str):
        """("rising", why) when the latest window's mean is contracts.divergence.LOSS_RISE_FACTOR times the series'
        first loss or more, beyond the noise of that mean (the window's own spread: the run's noise before it holds
        the blow-up itself): the loss rose far above where the job started."""
        if initial is None or not initial > 0:
            return None
        after, count = float(np.mean(current)), len(current)
        allowance = rule_checks.NOISE_STANDARD_ERRORS * float(np.std(current)) / math.sqrt(count)
        if after < LOSS_RISE_FACTOR * initial or after - initial <= allowance:
            return None
        if sustained_level(current) < LOSS_RISE_FACTOR * initial:
            return None  # a spike the run came back from within the window: not a loss that stayed up
        return "rising", (
            f"loss rose to a mean of {after:.6g} over {count} {span}, {after / initial:.3g}x its first value "
            f"{initial:.6g} (a rise from {LOSS_RISE_FACTOR:g}x beyond the noise, {allowance:.3g}, is a divergence): "
            "the loss diverged, it did not stay flat"
        )

    def _stagnant(self, series: _LossSeries, mode_step: int, after: float, count: int, sigma: float, span: str):
        """("stagnant", why) when, over STAGNANT_STEPS mode steps and STAGNANT_CHECKS judgements, the latest window's
        mean is not below the first window's by more than the noise of the two means nor by STAGNANT_FALL_PERCENT, and
        the weights show it cannot fall (:meth:`debugger.rules.weight_movement.Movement.stuck`). When every weight
        matrix moves, the status's details say so instead. Without saved weights the loss alone decides."""
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
        message = (
            f"loss has not fallen since its first judged window: mean {first:.6g} (over {series.first_count} "
            f"loss(es)) then {after:.6g} over {count} {span}, {mode_step - series.first_step + 1} steps in; a fall "
            f"under {STAGNANT_FALL_PERCENT:g}% or within the noise ({allowance:.3g}) does not count"
        )
        movement = self._movement.since_start(STAGNANT_STEPS // 2)
        if movement is None:  # no weights saved (a trial written without them): the loss alone
            return "stagnant", message
        stuck = movement.stuck()
        if stuck is None:
            # a slow start: a small rate, a plateau, or labels too noisy for the loss to show progress yet
            self.note(f"{message}; but {movement.describe(self.step_name)}: every weight matrix moves, so the run is not stagnant")
            return None
        why = ("the updates are too small to train" if stuck == "frozen"
               else f"the gradient does not reach {movement.least[0]}")
        return "stagnant", f"{message}; and {movement.describe(self.step_name)}: {why}"

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
