"""``invoke_rule``: run a rule over a trial's steps, as smdebug documents (docs/analysis.md)."""

from __future__ import annotations

import logging

from debugger.core.exceptions import (
    RuleEvaluationConditionMet,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)

LOGGER = logging.getLogger("smdebug.rules")


def invoke_rule(rule_obj, start_step=0, end_step=None, raise_eval_cond=False) -> None:
    """Invoke ``rule_obj`` at global steps ``start_step``, ``start_step + 1``, ... before ``end_step`` (None: until
    the run ends, when the trial raises NoMoreData). A step whose data is missing is skipped. When the rule's
    condition is met: raise RuleEvaluationConditionMet if ``raise_eval_cond``, else log it and go on."""
    step = start_step if start_step is not None else 0
    LOGGER.info("Started execution of rule %s at step %d", type(rule_obj).__name__, step)
    while end_step is None or step < end_step:
        try:
            rule_obj.invoke(step)
        except (TensorUnavailableForStep, StepUnavailable, TensorUnavailable) as error:
            LOGGER.debug("%s", error)
        except RuleEvaluationConditionMet as met:
            if raise_eval_cond:
                raise
            LOGGER.info("%s", met)
            if met.end_of_rule:
                break
        step += 1
    LOGGER.info("Ended execution of rule %s at end_step %d", type(rule_obj).__name__, step - 1)
