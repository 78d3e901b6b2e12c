"""The planner's decision as tests read it: its structured fields (``lambdas.remediation.state.attempts.Decision``) as
plain dicts, so an assertion names the remedy's evidence, changes and skips, not the words of the reason."""

from __future__ import annotations

from typing import Any

from lambdas.remediation.state.attempts import Decision


def evidence_of(decision: Decision) -> dict[str, Any]:
    """Each test of the chosen remedy's condition that held -> what the job showed."""
    return {fact.test: fact.measured for fact in decision.evidence}


def facts_of(decision: Decision) -> dict[str, tuple[Any, Any]]:
    """Each test of the chosen remedy's condition that held -> (what the job showed, the bound it was held against)."""
    return {fact.test: (fact.measured, fact.bound) for fact in decision.evidence}


def changes_of(decision: Decision) -> dict[str, tuple[Any, Any]]:
    """Each setting the decision changes -> (before, after)."""
    return {name: (change.before, change.after) for name, change in decision.changes.items()}


def skipped(decision: Decision) -> dict[str, str]:
    """The remedies the decision left out -> why."""
    return {skip.remedy: skip.why for skip in decision.skipped}


def skipped_with_jobs(decision: Decision) -> list[tuple[str, str, int | None]]:
    """The remedies the decision left out, why, and the job each names (the one it would repeat, or the one after
    it when it made the objective worse)."""
    return [(skip.remedy, skip.why, skip.job) for skip in decision.skipped]


def ended(decision: Decision) -> tuple[str, str, str | None]:
    """(remedy, next_action, end_cause): ("none", "end", cause) when the run ends."""
    return decision.remedy, decision.next_action, decision.end_cause
