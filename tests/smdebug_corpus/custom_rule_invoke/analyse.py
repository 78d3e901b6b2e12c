"""Invoking a rule outside SageMaker (docs/analysis.md, "invoke_rule")."""

import json
import sys

from my_rules import CustomGradientRule

from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules.rule_invoker import invoke_rule
from smdebug.trials import create_trial

trial = create_trial(sys.argv[1])
report = {}
rule = CustomGradientRule(trial, threshold=float(sys.argv[2]))
try:
    invoke_rule(rule, start_step=0, end_step=None, raise_eval_cond=True)
except RuleEvaluationConditionMet as met:
    report["condition_met"] = {"rule": met.rule_name, "step": met.step, "text": str(met)}
# without raise_eval_cond the invoker logs the condition and goes on to end_step (9: past the last saved
# step, 8, the trial would raise NoMoreData)
invoke_rule(CustomGradientRule(trial, threshold=float(sys.argv[2])), start_step=0, end_step=9)
report["completed_without_raising"] = True
print(json.dumps(report))
