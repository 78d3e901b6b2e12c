"""The local run's summary (remediate.run_report) and its report (remediate.local_display): which rules could not
judge a job, and why, from a real job's status (tests/lambdas/remediation/recorded/)."""

from __future__ import annotations

import io

from rich.console import Console

from lambdas.remediation.planning.planner import plan
from remediate.local_display import attempts_table, not_judged_lines
from remediate.run_report import not_judged_of
from tests.lambdas.remediation.conftest import ACCOUNT_INPUT
from tests.lambdas.remediation.recorded_runs import finish, recorded, start

WHY = (
    "no planned epochs: the run_spec states no epoch count (a hyperparameter named num_epochs, epochs, n_epochs, "
    "max_epochs, num_train_epochs, or the one hyperparameter_names maps as num_epochs)"
)


def ended_payload() -> dict:
    run = recorded("mlp-declared-epochs-left-to-the-script")
    return {"state": plan(finish(start(run, dict(ACCOUNT_INPUT)), run["jobs"][0])).model_dump(mode="json")}


def test_the_summary_names_each_rule_that_could_not_judge_a_job():
    attempt = ended_payload()["state"]["attempts"][0]
    assert attempt["outcome"] == "completed"
    assert not_judged_of(attempt) == [{"rule": "ObjectiveOutOfReach", "why": WHY}]


def test_the_report_says_it_under_the_attempt_and_in_the_table():
    attempt = ended_payload()["state"]["attempts"][0]
    row = {"number": 1, "hyperparameters": attempt["hyperparameters"], "training_steps": 125,
           "objective_value": attempt["objective_value"], "result": "completed", "not_judged": not_judged_of(attempt)}
    assert not_judged_lines(row) == [f"     ObjectiveOutOfReach could not judge: {WHY}"]
    summary = {"policy": "declared", "objective": {"metric_name": "validation:accuracy", "type": "Maximize",
                                                   "target_value": 0.9}, "attempts": [row]}
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(attempts_table(summary))
    assert "not judged: ObjectiveOutOfReach" in out.getvalue()
    assert not_judged_lines({**row, "not_judged": []}) == []
