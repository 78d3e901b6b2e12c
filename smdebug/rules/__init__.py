from smdebug.rules.req_tensors import RequiredTensors, RequiredTensorsForTrial
from smdebug.rules.rule import Rule
from smdebug.rules.rule_invoker import invoke_rule

__all__ = ["RequiredTensors", "RequiredTensorsForTrial", "Rule", "invoke_rule"]
