import math

import pytest

from contracts import ContractError
from contracts.objective import Objective


def test_maximize_and_minimize_objectives_judge_a_value_and_the_shortfall():
    accuracy = Objective.from_json({"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9})
    assert accuracy.describe() == "test:accuracy >= 0.9"
    assert accuracy.met(0.9) and not accuracy.met(0.48)
    assert accuracy.shortfall(0.48) == pytest.approx(0.42) and accuracy.shortfall(0.95) == 0
    loss = Objective.from_json({"metric_name": "val_loss", "type": "Minimize", "target_value": 0.2})
    assert loss.describe() == "val_loss <= 0.2"
    assert loss.met(0.1) and not loss.met(0.3) and loss.shortfall(0.3) == pytest.approx(0.1)
    assert not loss.met(math.nan) and not loss.met(None) and loss.shortfall(math.inf) == math.inf
    assert Objective.from_json(accuracy.to_json()) == accuracy


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("acc>=0.9", "objective"),
        ({"metric_name": "", "type": "Maximize", "target_value": 1}, "objective.metric_name"),
        ({"metric_name": "a", "type": "maximize", "target_value": 1}, "objective.type"),
        ({"metric_name": "a", "type": "Maximize", "target_value": True}, "objective.target_value"),
        ({"metric_name": "a", "type": "Maximize", "target_value": float("inf")}, "objective.target_value"),
        ({"metric_name": "a", "type": "Maximize"}, "objective.target_value"),
        ({"metric_name": "a", "type": "Maximize", "target_value": 1, "goal": 2}, "objective.goal"),
    ],
)
def test_a_bad_objective_names_the_field(value, field):
    with pytest.raises(ContractError) as caught:
        Objective.from_json(value)
    assert caught.value.field == field
