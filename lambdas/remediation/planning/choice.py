"""The planner's third step: the first remedy of the ladder that answers the situation. It must hold (its condition
on the evidence), apply (its change stays within its bounds and changes something), be allowed (a change to the
training loss needs the user's consent; a fixed hyperparameter is not changed), be new (no job of the run ran
the settings it gives, and it did not make the objective worse before) and fit in one job's request (SageMaker takes
at most 100 hyperparameters). Remedies left out for any of the last three reasons are kept, with why, for the
decision to name."""

from __future__ import annotations

import dataclasses

from contracts.remedies import Remedy
from contracts.remedy_conditions import Fact
from lambdas.remediation.job.job_request import count_hyperparameters
from lambdas.remediation.planning.ladders import Ladder
from lambdas.remediation.planning.situation import PlanningSituation
from lambdas.remediation.state.payload import WorkflowState


@dataclasses.dataclass(frozen=True)
class Skip:
    """A remedy left out, and why (``lambdas.remediation.state.attempts.SkipWhy``); ``job``: the job it would repeat,
    or the one after it when it made the objective worse; ``facts``: its condition's facts, when it held."""

    remedy: Remedy
    key: str
    index: int
    why: str
    job: int | None = None
    facts: tuple[Fact, ...] = ()
    #: For "too_many_hyperparameters": how many the job's request would carry.
    carried: int | None = None


@dataclasses.dataclass(frozen=True)
class Choice:
    """The remedy chosen: where it stands in its ladder, the facts its condition held on, and the settings the next
    job runs with."""

    ladder: Ladder
    index: int
    remedy: Remedy
    facts: tuple[Fact, ...]
    settings: dict


def choose(state: WorkflowState, situation: PlanningSituation, ladders: list[Ladder]) -> tuple[Choice | None, list[Skip]]:
    """The first remedy that holds, applies, is allowed and is new (None when none is), and the remedies left out."""
    skips: list[Skip] = []
    for ladder in ladders:
        for index, remedy in enumerate(ladder.remedies):
            worse = situation.worse.get(remedy.label)
            if worse is not None:
                skips.append(Skip(remedy, ladder.key, index, "made_it_worse", worse.job))
                continue
            if situation.labels is not None and not remedy.when.names_a_cause:
                continue
            holds, facts = remedy.when.check(situation.evidence, situation.settings)
            if not holds:
                continue
            if remedy.change.setting in state.fixed_hyperparameters:
                if remedy.apply(situation.settings, situation.evidence) is not None:
                    skips.append(Skip(remedy, ladder.key, index, "fixed_hyperparameter", facts=tuple(facts)))
                continue
            remedy = _without_fixed(remedy, state.fixed_hyperparameters)
            updated = remedy.apply(situation.settings, situation.evidence)
            if updated is None:
                continue
            if remedy.changes_the_loss and not loss_changes_allowed(state):
                skips.append(Skip(remedy, ladder.key, index, "not_allowed", facts=tuple(facts)))
                continue
            if updated in situation.tried:
                job = next(number for number, tried in enumerate(situation.tried) if tried == updated)
                skips.append(Skip(remedy, ladder.key, index, "repeats_a_job", state.attempts[job].number))
                continue
            count = count_hyperparameters(state, state.run_spec.with_settings(updated))
            if not count.fits:
                skips.append(Skip(remedy, ladder.key, index, "too_many_hyperparameters", carried=count.carried))
                continue
            return Choice(ladder, index, remedy, tuple(facts), updated), skips
    return None, skips


def loss_changes_allowed(state: WorkflowState) -> bool:
    """The user's consent to changes of the training loss: run_spec.allow_loss_changes, or remedies of their own
    (policy "declared": every remedy in it is one they wrote)."""
    return state.allow_loss_changes or state.policy == "declared"


def _without_fixed(remedy: Remedy, fixed: list[str]) -> Remedy:
    """The remedy without the ``also`` changes on fixed hyperparameters."""
    if not any(change.setting in fixed for change in remedy.also):
        return remedy
    return dataclasses.replace(remedy, also=tuple(change for change in remedy.also if change.setting not in fixed))
