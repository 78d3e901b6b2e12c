"""What a built-in rule reads: the union of some collections and regex matches among a trial's tensors, plus
the trial's every-step signals; and how far the training loss has fallen (:class:`LossFall`). Shared by
:mod:`debugger.rules.optimization_rules` and :mod:`debugger.rules.tensor_rules`."""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from debugger.core.modes import ModeKeys
from debugger.rules.gradient_flow import structurally_silent
from debugger.rules.tensor_signal import silent_tensors
from debugger.trial.trial import BaseTrial


def first_value(array: Any) -> float:
    """The first element of a (scalar or array) value as a float; NaN for an empty one."""
    flat = np.asarray(array).reshape(-1)
    return float(flat[0]) if flat.size else float("nan")


class Selection:
    """A rule's tensors: the union of some collections and regex matches (everything when both are empty),
    recomputed only when new tensor names appear; plus the trial's every-step signals that match.

    With ``skip_silent`` the tensors that cannot show the rule's problem (:mod:`debugger.rules.tensor_signal`: frozen
    parameters, biases a normalization removes; :func:`debugger.rules.gradient_flow.structurally_silent`: a gradient
    that is float32 rounding of the model's own scale at the step) are left out, and kept in ``skipped`` with why."""

    def __init__(
        self, trial: BaseTrial, collections: list[str], regex: tuple[re.Pattern[str], ...], order=None,
        skip_silent: bool = False,
    ):
        self.trial, self.collections, self.regex, self.order = trial, collections, regex, order
        self.skip_silent = skip_silent
        #: selected tensors left out because they cannot show the problem -> why
        self.skipped: dict[str, str] = {}
        self._known: tuple[int, int] = (-1, -1)
        self._names: list[str] = []
        self._position: dict[str, int] = {}

    def selects(self, name: str, member_of) -> bool:
        if not self.collections and not self.regex:
            return True
        return any(collection in member_of for collection in self.collections) or any(
            pattern.search(name) for pattern in self.regex
        )

    def names(self) -> list[str]:
        membership = self.trial._names()
        silent = silent_tensors(self.trial) if self.skip_silent else {}
        if (len(membership), len(silent)) != self._known:
            self._known = (len(membership), len(silent))
            names = [name for name, member_of in membership.items() if self.selects(name, member_of)]
            self.skipped.update({name: silent[name] for name in names if name in silent})
            names = [name for name in names if name not in silent]
            self._names = sorted(names, key=self.order) if self.order else names
            self._position = {name: index for index, name in enumerate(self._names)}
        return self._names

    def present_at(self, step: int) -> list[str]:
        """The selected tensors with a value at ``step``, in the selection's order. A step that saved nothing holds
        only the every-step signals: looked up from the step's few names, not over every selected tensor."""
        available = self.trial.names_at(step)
        names = self.names()
        if len(available) < len(names):
            position = self._position
            return sorted((name for name in available if name in position), key=position.__getitem__)
        return [name for name in names if name in available]

    def silent_at(self, step: int) -> dict[str, str]:
        """The selected tensors that are structurally silent at ``step`` (none without ``skip_silent``), noted in
        ``skipped``."""
        if not self.skip_silent:
            return {}
        silent = structurally_silent(self.trial, step)
        self.skipped.update({name: why for name, why in silent.items() if name not in self.skipped and name in self._names})
        return silent

    def names_at(self, step: int) -> list[str]:
        """The selected tensors with a value at ``step``, but the structurally silent ones."""
        names = self.present_at(step)
        silent = self.silent_at(step) if names else {}
        return [name for name in names if name not in silent]

    def values_at(self, step: int, skip: Callable[[str], bool] | None = None) -> Iterator[tuple[str, Any]]:
        """(name, value) of the selected tensors with a value at ``step`` (read lazily; none for which ``skip``
        says so, nor the structurally silent ones), then the selected signals."""
        present = self.present_at(step)
        seen = set(present)
        silent = self.silent_at(step) if present else {}
        # the in-job trial reads a value it holds directly (LiveTrial.value_at); any other trial through its tensors
        read = getattr(self.trial, "value_at", None) or (lambda name, at: self.trial.tensor(name).value(at))
        for name in present:
            if name not in silent and (skip is None or not skip(name)):
                yield name, read(name, step)
        signals = getattr(self.trial, "signals_at", None)
        for name, (member_of, value) in (signals(step) if signals else {}).items():
            if name not in seen and self.selects(name, member_of):
                yield name, value


class LossFall:
    """How many times smaller the training loss is now than at the first step seen: at least 1. Now is the step's
    own loss (its gradients are that batch's), else the mean of the latest ``window`` training or global losses. A
    gradient is as large as the loss it carries, so the rules that compare gradients with an absolute bound
    (VanishingGradient's threshold, UnchangedTensor's atol) divide the bound by this: a model that has fit its data
    has small gradients everywhere, not a gradient that died on its way."""

    def __init__(self, trial: BaseTrial, window: int = 10):
        self.trial = trial
        self._losses = Selection(trial, ["losses"], ())
        self.initial: float | None = None
        self.recent: collections.deque[float] = collections.deque(maxlen=window)
        self._seen_step: int | None = None
        self._now: float | None = None

    def at(self, step: int) -> float:
        if step != self._seen_step:
            self._seen_step, self._now = step, None
            mode = self.trial._global_to_mode.get(step, (ModeKeys.GLOBAL, step))[0]
            if mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL):
                for _, value in self._losses.values_at(step):
                    loss = first_value(value)
                    if math.isfinite(loss):
                        self.initial = loss if self.initial is None else self.initial
                        self.recent.append(loss)
                        self._now = loss
                        break
            if self._now is None and self.recent:
                self._now = float(np.mean(self.recent))
        if self.initial is None or self._now is None or self.initial <= 0 or self._now < 0:
            return 1.0  # a loss that can be negative has no fall to measure
        if self._now == 0.0:
            return math.inf  # a batch the model fits exactly (a loss of 0.0 in float32): no gradient is owed
        return max(1.0, self.initial / self._now)

    def describe(self) -> str:
        """'the training loss fell from 2.4 to 7e-06' ('' before any loss)."""
        if self.initial is None or self._now is None:
            return ""
        return f"the training loss fell from {self.initial:.3g} to {self._now:.3g}"
