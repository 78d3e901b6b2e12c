"""``from smdebug.rules.rule import Rule``: smdebug's custom-rule base class over :class:`debugger.rules.rule.Rule`.

A subclass runs offline over a trial (``invoke_rule``) and, configured in DebugRuleConfigurations with
``custom_rule_source``, in the training job at every step (``check``).
"""

from __future__ import annotations

from contracts.debugger_config import parse_actions
from debugger.core.exceptions import RuleEvaluationConditionMet
from debugger.rules.rule import Rule as DebuggerRule
from smdebug.analysis.utils import no_refresh
from smdebug.rules.req_tensors import RequiredTensors


class Rule(DebuggerRule):
    def __init__(self, base_trial, action_str=None, other_trials=None):
        super().__init__(base_trial)
        self.other_trials = other_trials
        self.trials = [base_trial, *(other_trials or [])]
        self.req_tensors = RequiredTensors(base_trial, other_trials)
        # Actions of a rule run in the job come from its RuleParameters.action_json; offline, invoke_rule
        # raises RuleEvaluationConditionMet and carries out none (they are checked, not silently dropped).
        self.actions = parse_actions(action_str, "action_str") if action_str else []

    def set_required_tensors(self, step: int) -> None:
        """Declare the tensors invoke_at_step reads: ``self.req_tensors.add(name, steps=[step])``."""

    def _prepare(self, step: int) -> None:
        self.req_tensors.clear()
        self.set_required_tensors(step)
        self.req_tensors.fetch()

    def invoke(self, step: int) -> None:
        """Wait for ``step``, run the rule; RuleEvaluationConditionMet when it returns True."""
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials):
            self._prepare(step)
            met = self.invoke_at_step(step)
        if met:
            raise RuleEvaluationConditionMet(self.rule_name, step)

    def check(self, step: int) -> bool:
        self._prepare(step)
        return bool(self.invoke_at_step(step))
