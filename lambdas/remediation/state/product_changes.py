"""Every change the product made to a job, against the run_spec the user started the run with: the script's
hyperparameters, the debugger's settings that change the training loss (``contracts.debugger_settings``) and the rule
parameters the planner moved (``Decision.rule_changes``). What every launch shows as what it "ran with"."""

from __future__ import annotations

from lambdas.remediation.state.attempts import Attempt, Change
from lambdas.remediation.state.payload import WorkflowState

#: How a rule parameter the planner moved is keyed among the changes.
RULE_PREFIX = "rule:"


def product_changes(state: WorkflowState, attempt: Attempt | None = None) -> dict[str, Change]:
    """The changes ``attempt``'s job ran with (default: the last attempt), first value -> its value: settings by
    name (debugger settings by run_spec field), rule parameters as "<rule>.<parameter>". Empty for the first job."""
    attempt = attempt or state.last_attempt
    if attempt is None or not state.attempts:
        return {}
    start, now = state.attempts[0].settings(), attempt.settings()
    changes = {
        name: Change(before=start.get(name), after=now.get(name))
        for name in dict.fromkeys([*start, *now])
        if start.get(name) != now.get(name)
    }
    for earlier in state.attempts:
        if earlier.number >= attempt.number or earlier.decision is None:
            continue
        for name, change in earlier.decision.rule_changes.items():
            key = f"{RULE_PREFIX}{name}"
            first = changes[key].before if key in changes else change.before
            changes[key] = Change(before=first, after=change.after)
    return changes
