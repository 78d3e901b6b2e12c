"""Upper bounds on the learning rates, learned from the run's own history (decision 187): a rate a job diverged or
exploded at, or blew up at before a collapse, is too high for this run, and so is a rate a remedy divided by the
targets' scale. No later remedy sets a rate at or above one of them (``contracts.remedies.Remedy.apply`` reads them
from ``contracts.situation.Situation.rate_ceilings``), whatever its own bounds allow: raising a "too small" rate back
to the optimizer's usual start after it diverged there spends a launch to learn it again."""

from __future__ import annotations

from collections.abc import Iterable

from contracts.hyperparameter_values import is_number, show
from contracts.rule_status import DATA_ERROR_ISSUE_KINDS
from contracts.situation import RateCeiling, Situation
from lambdas.remediation.planning.learning_rate_ranges import CEILING_RATIO
from lambdas.remediation.state.attempts import Attempt

#: The remedies that answer a network that blew up and did not recover (``remedies.catalogue``): the rate they
#: lowered was too high.
AFTER_COLLAPSE = ("LowerRateAfterCollapse", "LowerWarmupRateAfterCollapse")
#: The remedy that divides the rate by a regression's targets' scale: the rate before it was that many times too high.
FOR_TARGET_SCALE = "RateForTargetScale"


def rate_ceilings(
    attempts: Iterable[tuple[Attempt, Situation]], learning_rate: str, warmup_learning_rate: str
) -> tuple[RateCeiling, ...]:
    """The ceilings the finished ``attempts`` (each with its evidence as conditions read it) set on the rates, by the
    script's names of its learning rate and warmup rate."""
    ceilings = []
    for attempt, situation in attempts:
        if attempt.outcome == "running":
            continue
        what = _blew_up(attempt, situation)
        if what is not None:
            name = warmup_learning_rate if _in_warmup(attempt, situation) else learning_rate
            rate = attempt.hyperparameters.get(name)
            if is_number(rate) and not isinstance(rate, bool) and rate > 0:
                ceilings.append(RateCeiling(name, float(rate), attempt.number, f"the rate job {attempt.number} {what} at"))
        decision = attempt.decision
        change = decision.changes.get(learning_rate) if decision is not None else None
        if decision is not None and decision.remedy == FOR_TARGET_SCALE and change is not None and is_number(change.after):
            # the rate the targets' scale implies is this loss's usual start: its range ends CEILING_RATIO times above
            ceilings.append(RateCeiling(
                learning_rate, float(f"{change.after * CEILING_RATIO:.6g}"), attempt.number,
                f"{CEILING_RATIO:g} times the rate {show(change.after)} that job {attempt.number}'s targets' scale "
                f"implies (its rate {show(change.before)} divided by that scale)", blew_up=False,
            ))  # fmt: skip
    return tuple(ceilings)


def _blew_up(attempt: Attempt, situation: Situation) -> str | None:
    """How the job showed its rate too high ("diverged", "exploded", "blew up"), or None."""
    issue = attempt.issue
    if issue is not None and issue.rule == "ExplodingTensor" and issue.kind not in DATA_ERROR_ISSUE_KINDS:
        return "exploded"
    if situation.loss_divergence is not None or situation.gradient_norm_divergence is not None:
        return "diverged"
    if attempt.decision is not None and attempt.decision.remedy in AFTER_COLLAPSE:
        return "blew up"
    return None


def _in_warmup(attempt: Attempt, situation: Situation) -> bool:
    """Whether it blew up in a warmup phase (then the warmup rate was too high, not the main one)."""
    decision = attempt.decision
    return situation.phase == "warmup" or (decision is not None and decision.remedy == "LowerWarmupRateAfterCollapse")
