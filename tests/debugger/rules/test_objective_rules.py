"""ObjectiveOutOfReach in real jobs: a plain script that prints its held-out accuracy once per epoch, run by the job
launcher with the rule configured as the workflow configures it (the run's objective, the job's planned epochs)."""

from __future__ import annotations

import json

import pytest

from contracts.job import EXIT_RULE_STOP, EXIT_SUCCESS, METRIC_DEFINITIONS_HYPERPARAMETER
from contracts.objective import Objective
from contracts.rule_status import RULE_STATUS_FILE
from debugger.rules.objective_rules import ObjectiveOutOfReach
from debugger.trial.live_trial import LiveTrial
from tests.debugger.hook.zero_change.test_zero_change_jobs import STOP, launch

pytestmark = pytest.mark.training

#: An MLP on 4 classes whose training labels are drawn at random: its held-out accuracy stays near chance (0.25).
RANDOM_LABELS = """
import torch
from torch import nn

torch.manual_seed(0)
x, y = torch.randn(512, 8), torch.randint(0, 4, (512,))
held_out_x, held_out_y = torch.randn(256, 8), torch.randint(0, 4, (256,))
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(12):
    for start in range(0, 512, 64):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x[start:start + 64]), y[start:start + 64]).backward()
        optimizer.step()
    with torch.no_grad():
        accuracy = (model(held_out_x).argmax(1) == held_out_y).float().mean().item()
    print(f"epoch={epoch} val_acc={accuracy:.4f}", flush=True)
"""
DEFINITIONS = [{"Name": "validation:accuracy", "Regex": r"val_acc=([0-9.]+)"}]


def reach_rule(target: float, planned_epochs: int | None = 12) -> list[dict]:
    parameters = {
        "rule_to_invoke": "ObjectiveOutOfReach",
        "objective": json.dumps({"metric_name": "validation:accuracy", "type": "Maximize", "target_value": target}),
        "action_json": STOP,
    }
    if planned_epochs is not None:
        parameters["planned_epochs"] = str(planned_epochs)
    return [{"RuleConfigurationName": "ObjectiveOutOfReach", "RuleParameters": parameters}]


def run(tmp_path, rules):
    process, out_dir, failure = launch(
        tmp_path, RANDOM_LABELS, rules=rules,
        extra_arguments=(f"--{METRIC_DEFINITIONS_HYPERPARAMETER}", json.dumps(DEFINITIONS)),
    )  # fmt: skip
    out, log = process.communicate(timeout=180)
    status = json.loads((out_dir / RULE_STATUS_FILE).read_text())
    return process.returncode, out, log, status, failure


def test_a_job_that_cannot_reach_its_objective_is_stopped_after_a_third_of_its_epochs(tmp_path):
    """Chance accuracy against 0.9: stopped at its fourth epoch of twelve, with the numbers that say why."""
    code, out, log, status, failure = run(tmp_path, reach_rule(0.9))
    assert code == EXIT_RULE_STOP, log
    assert len(out.splitlines()) == 4  # the fourth report is the first judged: max(4, a third of 12)
    assert failure.read_text().startswith("StopTraining: rule ObjectiveOutOfReach found an issue")
    rule = status["rules"][0]
    assert rule["RuleEvaluationStatus"] == "IssuesFound" and rule["issue"]["kind"] == "out_of_reach"
    assert "after 4 of 12 epochs" in rule["issue"]["message"]
    assert "short of validation:accuracy >= 0.9" in rule["issue"]["message"]


def test_a_job_that_can_reach_its_objective_trains_all_its_epochs(tmp_path):
    """The same job against 0.2, which chance accuracy meets: never judged out of reach."""
    code, out, log, status, _ = run(tmp_path, reach_rule(0.2))
    assert code == EXIT_SUCCESS, log
    assert len(out.splitlines()) == 12
    assert status["rules"][0]["RuleEvaluationStatus"] == "NoIssuesFound"


def test_a_near_miss_is_not_judged_and_its_status_says_so(tmp_path):
    """The rule as the hook runs it, on the metric values a job reported (report seed 1030, configuration 7, job 1:
    a rare class, flat at 0.86-0.87 for six epochs before it climbed to 0.93 against 0.9)."""
    trial = LiveTrial(tmp_path)
    rule = ObjectiveOutOfReach(trial, planned_epochs=12, objective=Objective("validation:accuracy", "Maximize", 0.9))
    history = trial.metric_history.setdefault("validation:accuracy", [])
    for step, value in enumerate([0.825, 0.8611, 0.8667, 0.8694, 0.8611, 0.8639, 0.8583, 0.8806]):
        history.append(value)
        assert not rule.check(step)
    assert rule.latest_note == (
        "not judged after 8 of 12 epochs: its best, 0.8806, is within 5% of validation:accuracy >= 0.9"
    )


def test_without_the_jobs_planned_epochs_the_rule_judges_nothing_and_says_so(tmp_path):
    code, out, log, status, _ = run(tmp_path, reach_rule(0.9, planned_epochs=None))
    assert code == EXIT_SUCCESS, log
    assert len(out.splitlines()) == 12
    rule = status["rules"][0]
    assert rule["RuleEvaluationStatus"] == "NoIssuesFound"
    assert "not judged: no planned_epochs" in rule["StatusDetails"]
