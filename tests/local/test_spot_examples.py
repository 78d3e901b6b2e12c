"""Managed spot training on each of the project's examples, run locally as README and docs/local.md say: every way a
script makes its hook resumes after its instance is reclaimed. examples/mlp and examples/ddp (``smd.Hook.
create_from_json_file()``, one process and two ranks), examples/xgboost (``smdebug.xgboost.Hook``) and examples/plain
(no hook: the zero-change hook) are each reclaimed twice; each restart resumes from its newest checkpoint, the
debugger numbers the steps on from there, the trial holds each step once, and the job ends as the same job does
without interruptions (its objective value, its steps, quiet rules)."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from debugger import create_trial
from debugger.core.modes import ModeKeys

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]


@dataclasses.dataclass(frozen=True)
class Example:
    name: str
    #: run_spec changes: a configuration that trains cleanly, small enough to be cheap
    hyperparameters: dict
    interruptions: list
    #: make_data.py of this example ("mlp" or "xgboost") and its arguments, or None: the script makes its own data
    data: tuple[str, ...] | None
    #: other run_spec changes
    spec: dict = dataclasses.field(default_factory=dict)


EXAMPLE_RUNS = [
    # every step written, so the platform sees each one and reclaims the instance mid-epoch, where it was asked to
    Example("mlp", {"lr": 0.1, "epochs": 4}, [{"at_step": 35}, {"at_step": 62}], ("mlp",), {"debugger_save_interval": 1}),
    Example(
        "plain", {"lr": 0.05, "epochs": 4}, [{"at_step": 35}, {"at_step": 62}], ("mlp",), {"debugger_save_interval": 1}
    ),
    Example(
        "xgboost",
        {"num_round": 40, "max_depth": 3, "eta": 0.3, "min_child_weight": 1, "lambda": 1, "checkpoint_frequency": 5,
         "objective": "multi:softprob", "num_class": 10},
        [{"at_step": 8}, {"at_step": 22}],
        ("xgboost", "--dataset", "digits"),  # 10 classes: 10 trees a round
        # a round's step written every round (with its SHAP values and trees): the platform sees each round go by,
        # so it reclaims the instance mid-boosting, not after boosting's few milliseconds
        {"debugger_save_interval": 1},
    ),
    Example(
        "ddp", {"lr": 0.05, "epochs": 3, "bad-shard-rank": -1}, [{"at_step": 20}, {"at_step": 34}], None,
        {"debugger_save_interval": 1},
    ),
]


def channels(example: Example, tmp_path: Path) -> list[str]:
    if example.data is None:
        return []
    out = tmp_path / "data"
    subprocess.run(
        [sys.executable, str(EXAMPLES / example.data[0] / "make_data.py"), "--out", str(out), *example.data[1:]],
        check=True, capture_output=True,
    )
    found = ["--channel", f"train={out / 'train'}"]
    if (out / "validation").is_dir():
        found += ["--channel", f"validation={out / 'validation'}"]
    return found


def local_run(example: Example, tmp_path: Path, name: str, interruptions: list) -> dict:
    spec = json.loads((EXAMPLES / example.name / "run_spec.json").read_text())
    spec.update(source_dir=str(EXAMPLES / example.name), instance_type="local", max_num_retraining=1)
    spec["hyperparameters"].update(example.hyperparameters)
    spec.update(example.spec)
    if interruptions:
        spec["spot_interruptions"] = interruptions
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    finished = subprocess.run(
        [*CLI, "--run-spec", str(path), *channels(example, tmp_path), "--run-dir", str(tmp_path / name),
         "--num-threads", "1", "--json"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-4000:]
    return json.loads(finished.stdout)


@pytest.mark.parametrize("example", EXAMPLE_RUNS, ids=[example.name for example in EXAMPLE_RUNS])
def test_an_example_reclaimed_twice_resumes_and_ends_as_without_interruptions(tmp_path, example):
    alone = local_run(example, tmp_path, "alone", [])
    summary = local_run(example, tmp_path, "spot", example.interruptions)
    (job,), (job_alone,) = summary["attempts"], alone["attempts"]

    # One job, completed, reclaimed twice; each restart found the checkpoints written before it.
    assert summary["execution_status"] == "SUCCEEDED" and summary["launches"] == 1
    assert job["status"] == "Completed" and job["failure_reason"] is None
    assert len(job["spot_interruptions"]) == 2
    assert all(item["restored_files"] >= 1 for item in job["spot_interruptions"])
    log = Path(job["log"]).read_text()
    assert log.count("the instance was reclaimed") == 2
    resumed = [int(found) for found in re.findall(r"resuming from \S*?(\d+)(?:\.pt)?[:\s]", log)]
    assert len(resumed) == 2 and resumed == sorted(resumed), "each restart resumed from its newest checkpoint"

    # It ends as it does without interruptions: the same objective value from the same steps, rules quiet.
    assert summary["objective_value"] == pytest.approx(alone["objective_value"], abs=1e-4)
    assert summary["objective_value"] >= summary["objective"]["target_value"]
    assert (job["training_steps"], job["last_step"]) == (job_alone["training_steps"], job_alone["last_step"])
    bucket = summary["execution_input"]["bucket"]
    trial = create_trial(tmp_path / "spot" / "buckets" / bucket / "debug-output" / job["job_name"])
    trial_alone = create_trial(tmp_path / "alone" / "buckets" / bucket / "debug-output" / job_alone["job_name"])
    # each step once, numbered as without interruptions; a step still open when the instance was reclaimed after a
    # checkpoint (an evaluation pass the checkpoint follows) was never written and is not redone: at most one each
    assert set(trial.steps()) <= set(trial_alone.steps())
    assert len(trial_alone.steps()) - len(trial.steps()) <= len(job["spot_interruptions"])
    assert trial.steps(mode=ModeKeys.TRAIN) == trial_alone.steps(mode=ModeKeys.TRAIN)
    status = trial.rule_status()
    assert status.training_ended and status.last_step == trial_alone.rule_status().last_step
    assert status.issues_found() == [] and [rule.RuleEvaluationStatus for rule in status.rules] == [
        rule.RuleEvaluationStatus for rule in trial_alone.rule_status().rules
    ]
