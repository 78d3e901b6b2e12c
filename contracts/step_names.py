"""How every message names a step: the user counts optimizer steps, the saved data global steps.

The debugger saves and numbers steps as smdebug does (a global step per forward pass it counts: an evaluation pass,
or each evaluation of an ``optimizer.step(closure)`` closure, is one), so its trial reads as smdebug's. What a user
reads names the optimizer step instead: the number of optimizer updates before it. A training step is "step 7"; an
evaluation pass is "the evaluation pass after step 6" (never a training step). Where someone might look the step up
in the saved data (a failure reason, a decision's headline), the global step is said once beside it when it differs:
"step 7 (saved as global step 9)". A step with no optimizer step known (an older status document, an XGBoost job,
whose boosting round is its step) is named by its global step, as before. Standard library only.
"""

from __future__ import annotations

import re

#: A step as :func:`step_name` names it, anywhere in a text (the groups: :func:`read_step_name`).
STEP_NAME = (
    r"(?:step (?P<step>\d+)|the evaluation pass (?:after step (?P<after>\d+)|before step (?P<before>0)))"
    r"(?: \(saved as global step (?P<saved>\d+)\))?"
)


def step_name(global_step: int, optimizer_step: int | None = None, evaluation: bool = False, with_global: bool = False) -> str:
    """'step 7', 'the evaluation pass after step 6', and with ``with_global`` ' (saved as global step 9)' after it
    when the saved step's number is not the one said.

    ``optimizer_step``: the optimizer updates before the step (None: unknown, the global step is named)."""
    if optimizer_step is None:
        return f"step {global_step}"
    if evaluation:
        name = f"the evaluation pass after step {optimizer_step - 1}" if optimizer_step > 0 else "the evaluation pass before step 0"
    else:
        name = f"step {optimizer_step}"
    if with_global and (evaluation or optimizer_step != global_step):
        name += f" (saved as global step {global_step})"
    return name


def step_span(
    first_global: int, last_global: int, first_optimizer: int | None = None, last_optimizer: int | None = None,
    with_global: bool = False,
) -> str:
    """A span of training steps as a sentence names it: 'steps 0-1', 'step 3', and with ``with_global`` ' (saved as
    global steps 0-7)' after it when the saved steps' numbers are not the ones said.

    Without both optimizer steps (an older document, an XGBoost job) the global steps are named, as before."""
    if first_optimizer is None or last_optimizer is None:
        return _span(first_global, last_global)
    name = _span(first_optimizer, last_optimizer)
    if with_global and (first_optimizer, last_optimizer) != (first_global, last_global):
        name += f" (saved as global {_span(first_global, last_global)})"
    return name


def _span(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


def read_step_name(match: re.Match[str]) -> tuple[int, int | None, bool]:
    """(global step, optimizer step or None, evaluation pass) from a match of :data:`STEP_NAME` (a text written
    with ``with_global``: without the saved step the step said is the global one, and naming it by that says the
    same whether the optimizer step was known or not: None)."""
    evaluation = match["step"] is None
    said = int(match["step"]) if not evaluation else (int(match["after"]) + 1 if match["after"] is not None else 0)
    if match["saved"] is not None:
        return int(match["saved"]), said, evaluation
    return said, None, evaluation
