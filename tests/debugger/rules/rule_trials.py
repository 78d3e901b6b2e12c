"""What the rule tests build rules and trials with: a rule from its name and parameters, as a
DebugRuleConfiguration names it, over a LiveTrial holding constructed saved steps, or replaying a real job's
recorded trajectory (tests/debugger/rules/trajectories/)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from contracts import ContractError
from debugger.core.config import RuleSpec
from debugger.core.modes import ModeKeys
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


#: Real training trajectories (tests/debugger/rules/trajectories/make_trajectories.py makes them).
TRAJECTORIES = Path(__file__).resolve().parent / "trajectories"


def recorded_steps(name: str) -> list[tuple]:
    """(step, mode, mode step, loss, the script's latest metrics[, {gradient tensor: mean |g|}, [silent tensors]])
    at every step of a recorded real job; the gradients at the steps the job saved them, when it recorded them."""
    with gzip.open(TRAJECTORIES / f"{name}.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [tuple(json.loads(line)) for line in handle]


def replay(tmp_path: Path, name: str, rule_name: str, **parameters: str):
    """Run ``rule_name`` (RuleParameters as strings) over the recorded job ``name`` as the hook runs it in the job:
    each step begins in its mode, the script's metrics so far are visible, the loss is the step's signal, and where
    the job saved gradients they are saved tensors (holding the recorded mean |g|, all VanishingGradient compares),
    with the tensors the hook found cannot carry a signal. Returns the rule and the step it first fired at (None:
    quiet)."""
    trial = LiveTrial(tmp_path, keep_saved_steps=1)
    rule = make(rule_name, trial, **parameters)
    for step, mode, mode_step, loss, metrics, *saved in recorded_steps(name):
        trial.begin_step(step, ModeKeys[mode], mode_step)
        trial.latest_metrics.update(metrics)
        trial.add_signal("CrossEntropyLoss_output_0", ("losses",), step, loss)
        if saved:
            gradients, silent = dict(saved[0]), saved[1]
            if "total_gradient_norm" in gradients:
                trial.add_signal("total_gradient_norm", ("gradients",), step, gradients.pop("total_gradient_norm"))
            trial.silent_tensors.update({tensor: "the hook found it cannot carry a signal" for tensor in silent})
            if gradients:
                trial.add_saved_step(
                    step, {tensor: np.full(4, magnitude) for tensor, magnitude in gradients.items()},
                    {tensor: ["gradients"] for tensor in gradients}, ModeKeys[mode], mode_step,
                )
        if rule.invoke_at_step(step):
            return rule, step
    return rule, None
