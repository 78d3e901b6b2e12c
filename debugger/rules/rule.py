"""The rule base class every rule (built-in or custom) subclasses, and what a rule reports and needs.

A rule is a class in smdebug's style::

    from debugger.rules import Rule

    class LossAbove(Rule):
        def __init__(self, base_trial, threshold="5.0"):
            super().__init__(base_trial)
            self.threshold = float(threshold)      # RuleParameters arrive as strings

        def invoke_at_step(self, step):
            for name in self.base_trial.tensor_names(collection="losses"):
                tensor = self.base_trial.tensor(name)
                if tensor.has_step(step) and float(tensor.value(step)) > self.threshold:
                    self.report(tensor=name, value=float(tensor.value(step)), message="loss above threshold")
                    return True
            return False

The hook calls ``check(step)`` (by default ``invoke_at_step(step)``) on every step, with the global step.
In our own profile the cheap scalars (every loss, ``total_gradient_norm``, ``learning_rate``) exist at
every step; full tensors only at saved steps, so check ``tensor.has_step(step)`` (a
``TensorUnavailableForStep`` raised by ``value`` just skips the step). Return True when the rule finds an
issue; ``report`` adds where and why. The built-in rules live in the rule-family modules of this package
(:mod:`debugger.rules.registry` names them all, builds a configured rule and loads a custom one);
``smdebug.rules.rule.Rule`` (smdebug's base class, with ``req_tensors``) builds on this one.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any

from debugger.trial.trial import BaseTrial

#: The scalar the hook records at every step: the L2 norm over all parameter gradients.
TOTAL_GRADIENT_NORM = "total_gradient_norm"
GRADIENT_PREFIX = "gradient/"


@dataclasses.dataclass
class Finding:
    tensor: str
    value: float | None
    message: str
    #: How the condition failed, for rules with more than one way (contracts.rule_status.RuleIssue.kind).
    kind: str | None = None


@dataclasses.dataclass(frozen=True)
class Requirement:
    """A collection a rule needs saved; ``steps`` None means at the configured save steps. ``every``: also every
    this many training (TRAIN or GLOBAL) steps, whatever the save interval (a rule that compares steps so far
    apart, such as WeightUpdateRatio with num_steps); ``until``: only up to this training step (a rule that reads
    the collection early in a run, so a large model is not saved that often all job long)."""

    collection: str
    steps: frozenset[int] | None = None
    include_regex: tuple[re.Pattern[str], ...] = ()
    every: int | None = None
    until: int | None = None


class Rule:
    """Base class of every rule (built-in or custom): ``__init__(self, base_trial, **params)``, ``invoke_at_step``."""

    #: Why the rule cannot judge this job (None: it can; set it, or derive it in a property): the status carries it
    #: (RuleStatus.not_judged) and the run's summary names the rule, so a quiet rule that judged nothing is never read
    #: as a healthy verdict.
    not_judged: str | None = None

    def __init__(self, base_trial: BaseTrial, **params: Any):
        self.base_trial = base_trial
        self.rule_name = type(self).__name__
        self.logger = logging.getLogger(f"debugger.rules.{self.rule_name}")
        self.finding: Finding | None = None
        self.latest_note = ""

    def invoke_at_step(self, step: int) -> bool:
        raise NotImplementedError

    def check(self, step: int) -> bool:
        """What the hook calls at every step: True when the rule's condition is met at ``step``."""
        return bool(self.invoke_at_step(step))

    def step_name(self, step: int) -> str:
        """How the rule's message names global ``step``: the optimizer step the user counts, an evaluation pass as
        such (contracts.step_names); a trial that does not say names the global step."""
        name = getattr(self.base_trial, "step_name", None)
        return name(step) if name is not None else f"step {step}"

    def steps_between(self, earlier: int, later: int) -> int:
        """How many steps, as the user counts them (optimizer steps), lie from global step ``earlier`` to ``later``."""
        numbering = getattr(self.base_trial, "step_numbering", None)
        if numbering is None:
            return later - earlier
        (first, _), (last, _) = numbering.optimizer_step(earlier), numbering.optimizer_step(later)
        return later - earlier if first is None or last is None else last - first

    def report(self, tensor: str, value: float | None, message: str, kind: str | None = None) -> None:
        self.finding = Finding(tensor=tensor, value=None if value is None else float(value), message=message, kind=kind)

    def note(self, text: str) -> None:
        """Say why the rule did not fire on something it looked at (the status's details; the latest note wins)."""
        self.latest_note = text

    def requirements(self) -> list[Requirement]:
        return []

    def skipped_tensors(self) -> dict[str, str]:
        """Tensors this rule's selections left out because they cannot show its problem (frozen parameters,
        biases a normalization removes: :mod:`debugger.rules.tensor_signal`), with why."""
        skipped: dict[str, str] = {}
        for value in vars(self).values():
            found = getattr(value, "skipped", None)
            if isinstance(found, dict):
                skipped.update(found)
        return skipped
