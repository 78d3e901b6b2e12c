"""ObjectiveOutOfReach in real jobs: a plain script that prints its held-out accuracy once per epoch, run by the job
launcher with the rule configured as the workflow configures it (the run's objective, the job's planned epochs)."""

from __future__ import annotations

import json

import pytest

from contracts.job import EXIT_RULE_STOP, EXIT_SUCCESS, METRIC_DEFINITIONS_HYPERPARAMETER
from contracts.objective import Objective
from contracts.rule_status import RULE_STATUS_FILE
from debugger.rules.objective_rules import NO_EPOCHS, NO_OBJECTIVE, ObjectiveOutOfReach
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


def test_a_job_that_cannot_reach_its_objective_is_stopped_after_half_its_epochs(tmp_path):
    """Chance accuracy against 0.9: stopped at its sixth epoch of twelve, with the numbers that say why."""
    code, out, log, status, failure = run(tmp_path, reach_rule(0.9))
    assert code == EXIT_RULE_STOP, log
    assert len(out.splitlines()) == 6  # the sixth report is the first judged: max(4, half of 12)
    assert failure.read_text().startswith("StopTraining: rule ObjectiveOutOfReach found an issue")
    rule = status["rules"][0]
    assert rule["RuleEvaluationStatus"] == "IssuesFound" and rule["issue"]["kind"] == "out_of_reach"
    assert rule.get("not_judged") is None
    assert "after 6 of 12 epochs" in rule["issue"]["message"]
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
    assert rule["not_judged"] == NO_EPOCHS == (
        "no planned epochs: the run_spec states no epoch count (a hyperparameter named num_epochs, epochs, n_epochs, "
        "max_epochs, num_train_epochs, or the one hyperparameter_names maps as num_epochs)"
    )
    assert rule["StatusDetails"] == f"not judged: {NO_EPOCHS}"


ACCURACY_09 = Objective("validation:accuracy", "Maximize", 0.9)


def _fed(tmp_path, values, planned, objective=ACCURACY_09):
    """The rule as the hook runs it, fed ``values`` one report at a time."""
    trial = LiveTrial(tmp_path)
    rule = ObjectiveOutOfReach(trial, planned_epochs=planned, objective=objective)
    history = trial.metric_history.setdefault(objective.metric_name, [])
    fired = False
    for step, value in enumerate(values):
        history.append(value)
        fired = rule.check(step) or fired
    return rule, fired


def test_a_job_too_short_to_judge_says_so(tmp_path):
    rule, fired = _fed(tmp_path, [0.3, 0.3, 0.3, 0.3], planned=4)
    assert not fired
    assert rule.not_judged == "a job of 4 planned epochs is too short: the rule judges from epoch 4 on and never at the last"


def test_a_metric_reported_more_often_than_once_an_epoch_says_so(tmp_path):
    rule, _ = _fed(tmp_path, [0.3, 0.35] * 7, planned=6)
    assert rule.not_judged == "validation:accuracy was reported 14 times in a job of 6 planned epochs, not once an epoch"


def test_without_an_objective_it_says_so(tmp_path):
    rule = ObjectiveOutOfReach(LiveTrial(tmp_path), planned_epochs=12, objective=None)
    assert rule.not_judged == NO_OBJECTIVE == "no objective: the run_spec declares none"


def test_a_job_judged_once_is_judged(tmp_path):
    rule, fired = _fed(tmp_path, [0.5, 0.6, 0.65, 0.7, 0.72, 0.75], planned=12)
    assert not fired and rule.not_judged is None
    assert rule.latest_note == "within reach after 6 of 12 epochs: it reaches at most 1"
