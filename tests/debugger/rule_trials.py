"""What the rule tests build rules and trials with: a rule from its name and parameters, as a
DebugRuleConfiguration names it, over a LiveTrial holding constructed saved steps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contracts import ContractError
from debugger.config import RuleSpec
from debugger.rules import build_rule
from debugger.trial import LiveTrial


def make(rule_name: str, trial: LiveTrial, **parameters: str):
    """The rule ``rule_name`` with these RuleParameters (strings, as SageMaker passes them) reading ``trial``."""
    spec = RuleSpec(rule_name, rule_name, parameters, (), None, None, None, "rule.RuleParameters")
    return build_rule(spec, trial)


def trial_with(tmp_path: Path, steps: dict[int, dict[str, tuple[str, np.ndarray]]]) -> LiveTrial:
    """A LiveTrial whose saved steps hold the given {name: (collection, array)}."""
    trial = LiveTrial(tmp_path, keep_saved_steps=max(1, len(steps)))
    for step, tensors in steps.items():
        trial.add_saved_step(
            step,
            {name: np.asarray(array) for name, (_, array) in tensors.items()},
            {name: [collection] for name, (collection, _) in tensors.items()},
        )
    return trial


def assert_refused(tmp_path: Path, rule_name: str, parameter: str, value: str, hint: str) -> None:
    """Building ``rule_name`` with ``parameter=value`` raises a ContractError naming that RuleParameters field, its
    problem saying ``hint``."""
    with pytest.raises(ContractError) as raised:
        make(rule_name, LiveTrial(tmp_path), **{parameter: value})
    assert raised.value.field == f"rule.RuleParameters.{parameter}"
    assert hint in raised.value.problem
