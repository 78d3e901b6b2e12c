"""The planner's second step: the ladder of remedies for a failure. The run's own declared remedies (policy
"declared"), or a built-in set (``remedies.sets``: ``evidence``, ``anchor``) adapted to the script's hyperparameters
(``hyperparameter_names`` maps the set's conventional names to the script's; remedies on settings the job does not
have are left out). Each ladder is a tuple of :class:`contracts.remedies.Remedy`, tried in order."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from contracts.remedies import ANY_RULE, FAILURE_KINDS, Remedies, Remedy, adapt_to_script, parse_remedies
from lambdas.remediation.planning.learning_rate_ranges import RateRange
from lambdas.remediation.planning.remedies import sets as remedy_sets
from lambdas.remediation.planning.remedies.evidence import evidence_remedies
from lambdas.remediation.state.payload import WorkflowState


@dataclasses.dataclass(frozen=True)
class Ladder:
    """The remedies for one key (a rule's name, a failure kind, or "*" for any rule without its own)."""

    key: str
    remedies: tuple[Remedy, ...]


def ladders_for(state: WorkflowState, failure: str, rates: RateRange) -> list[Ladder]:
    """The remedies for the failure: its own, else (for a rule with none of its own) the any-rule list; a failure kind
    (objective missed, out of memory) has only its own. A rule's own list replaces the any-rule list: remedies that fit
    one failure can hurt another (lowering the learning rate answers an explosion, not vanishing gradients). The
    evidence set judges learning rates in ``rates``, the range of the optimizer the job stepped."""
    remedies = run_remedies(state, evidence_remedies(rates) if state.policy == "evidence" else None)
    if remedies.get(failure):
        return [Ladder(failure, remedies[failure])]
    if failure not in FAILURE_KINDS and remedies.get(ANY_RULE):
        return [Ladder(ANY_RULE, remedies[ANY_RULE])]
    return []


def run_remedies(state: WorkflowState, preset: Mapping[str, Any] | None = None) -> Remedies:
    """The remedies the planner applies, parsed against what the next job runs with: the run's own (policy declared,
    kept in the state), or the built-in set the policy names (code, not state, so the state stays small; ``preset``:
    that set as the planner tuned it to the job, e.g. to its optimizer's rates). Both were checked against the
    starting settings when the execution started."""
    settings = state.job_settings()
    if state.policy == "declared":
        declaration = state.remedies
    else:
        declaration = adapt_to_script(
            preset if preset is not None else remedy_sets.POLICY_REMEDIES[state.policy],
            state.hyperparameter_names,
            settings,
            state.hyperparameter_values,
        )
    return parse_remedies(
        declaration, settings, check_reachable=False, check_size=state.policy == "declared", kinds=state.kinds()
    )


def source(state: WorkflowState) -> str:
    """Where the ladder comes from, as the reasons name it."""
    return "the AWS sample's ladder" if state.policy == "anchor" else f"the {state.policy} remedies"
