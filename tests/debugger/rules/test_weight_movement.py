"""LossNotDecreasing tells a loss that cannot fall from one that has not fallen yet by how far the weights moved
(debugger.rules.weight_movement). Each test trains the random repair zoo's own script on its development data
(bench/zoo_random.py), through the launcher, with the product's default hook configuration and LossNotDecreasing at
its documented defaults and at the product's (num_steps 20)."""

import json
import sys
from pathlib import Path

import pytest

from contracts.rule_selection import product_rule_parameters
from debugger.rules.weight_movement import FROZEN_DISPLACEMENT, LEFT_BEHIND_SHARE, Movement

sys.path.insert(0, str(Path(__file__).resolve().parent / "trajectories"))
import make_trajectories  # noqa: E402  (runs a zoo configuration through the launcher)

#: The product's default hook configuration (lambdas/remediation/job/job_request.py: HOOK_COLLECTIONS, save interval 10).
HOOK = {"HookParameters": {"save_interval": "10"},
        "CollectionConfigurations": [{"CollectionName": name} for name in ("losses", "gradients", "weights")]}
PARAMETERS = pytest.mark.parametrize(
    "parameters", [{}, product_rule_parameters("LossNotDecreasing")], ids=["documented", "product"]
)


def loss_not_decreasing(tmp_path: Path, parameters: dict, configuration: str, **hyperparameters) -> dict:
    rules = [{"RuleConfigurationName": "LossNotDecreasing",
              "RuleParameters": {"rule_to_invoke": "LossNotDecreasing", **parameters}}]
    debug = make_trajectories.run_job("", configuration, hyperparameters, HOOK, rules, tmp_path)
    status = json.loads((debug / "rule-status.json").read_text())
    return status["rules"][0]


@pytest.mark.training
@PARAMETERS
def test_a_loss_that_never_moves_because_the_weights_do_not_is_reported_stagnant(tmp_path, parameters):
    # development seed 24, configuration 34: SGD at 5e-7 (the zoo's rate x1e-5)
    status = loss_not_decreasing(tmp_path, parameters, "zoo:24:34:faulted", epochs=5)
    assert status["RuleEvaluationStatus"] == "IssuesFound" and status["issue"]["kind"] == "stagnant", status
    assert "the updates are too small to train" in status["StatusDetails"]


@pytest.mark.training
@PARAMETERS
def test_a_deep_sigmoid_stack_whose_input_layer_does_not_learn_is_reported_stagnant(tmp_path, parameters):
    # development seed 23, configuration 38: 4x64 sigmoid, SGD 0.05, batches of 128; alone it ends at 0.10 (chance)
    status = loss_not_decreasing(tmp_path, parameters, "zoo:23:38:faulted", epochs=10)
    assert status["RuleEvaluationStatus"] == "IssuesFound" and status["issue"]["kind"] == "stagnant", status
    assert "the gradient does not reach Net_hidden.0.weight" in status["StatusDetails"]


@pytest.mark.training
@PARAMETERS
def test_a_slow_start_whose_weights_all_move_is_not_reported_stagnant(tmp_path, parameters):
    # development seed 22, configuration 8 at SGD 0.00135 (a rate the evidence set reached for it): its loss fell
    # 1% in 80 steps, within the noise; alone it goes on to 0.72 held-out accuracy. It was stopped at step 80.
    status = loss_not_decreasing(tmp_path, parameters, "zoo:22:8:faulted", lr=0.00135, epochs=3)
    assert status["RuleEvaluationStatus"] == "NoIssuesFound", status
    assert "loss has not fallen since its first judged window" in status["StatusDetails"]
    assert status["StatusDetails"].endswith("every weight matrix moves, so the run is not stagnant")


def test_what_the_weights_say_follows_the_measured_bounds():
    def movement(**shares):
        return Movement(0, 70, shares)

    assert movement(a=FROZEN_DISPLACEMENT / 2, b=FROZEN_DISPLACEMENT / 3).stuck() == "frozen"
    assert movement(a=0.1, b=0.1 * LEFT_BEHIND_SHARE / 2).stuck() == "left_behind"
    assert movement(a=0.1, b=0.1 * LEFT_BEHIND_SHARE * 2).stuck() is None
    assert movement(a=0.04).describe() == "the weights of a moved 0.04 of their size from step 0 to 70"
