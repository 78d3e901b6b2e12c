"""The run_spec's ``rules``: which built-in rules watch a job, checked before anything is launched."""

from __future__ import annotations

import pytest

from contracts import ContractError
from contracts.rule_selection import DEFAULT_RULES, MAX_RULES, parse_rules


def test_names_and_objects_give_one_shape_with_string_parameters():
    selection = parse_rules(["ExplodingTensor", {"name": "LossNotDecreasing", "parameters": {"num_steps": "50"}}])
    assert selection == [
        {"name": "ExplodingTensor", "parameters": {}},
        {"name": "LossNotDecreasing", "parameters": {"num_steps": "50"}},
    ]
    assert parse_rules([]) == []
    assert DEFAULT_RULES == ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "ObjectiveOutOfReach")


def test_start_and_end_step_are_settable_on_any_rule():
    assert parse_rules([{"name": "VanishingGradient", "parameters": {"start_step": "100"}}])[0]["parameters"] == {
        "start_step": "100"
    }


@pytest.mark.parametrize(
    ("rules", "field", "says"),
    [
        ("ExplodingTensor", "rules", "JSON list"),
        (["NoSuchRule"], "rules[0]", "not a built-in rule of the debugger; choose from"),
        ([{"parameters": {}}], "rules[0].name", "is required"),
        ([{"name": "VanishingGradient", "threshold": "1"}], "rules[0].threshold", 'allowed: "name", "parameters"'),
        ([{"name": "LossNotDecreasing", "parameters": {"num_steps": 50}}], "rules[0].parameters.num_steps", 'write "50"'),
        ([{"name": "LossNotDecreasing", "parameters": {"bogus": "1"}}], "rules[0].parameters.bogus", "allowed: "),
        ([{"name": "ExplodingTensor", "parameters": {"action_json": "[]"}}], "rules[0].parameters.action_json", "set by"),
        (["ExplodingTensor", "ExplodingTensor"], "rules[1]", "twice"),
        (["ExplodingTensor"] * (MAX_RULES + 1), "rules", f"at most {MAX_RULES}"),
        ([7], "rules[0]", "must be a rule name"),
    ],
)
def test_a_bad_selection_names_the_entry_and_the_fix(rules, field, says):
    with pytest.raises(ContractError) as error:
        parse_rules(rules)
    assert error.value.field == field
    assert says in error.value.problem
