"""An overfitting XGBoost job (examples/xgboost on scikit-learn's breast cancer) detected, stopped and remediated to its
objective through the state machine locally, by the evidence remedies for gradient-boosted trees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "xgboost"
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]


@pytest.fixture(scope="module")
def channels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("breast-cancer")
    subprocess.run([sys.executable, str(EXAMPLE / "make_data.py"), "--out", str(out)], check=True, capture_output=True)
    return out


def test_an_overfitting_xgboost_job_is_stopped_and_remediated_until_it_meets_the_objective(tmp_path, channels):
    run_dir = tmp_path / "run"
    finished = subprocess.run(
        [
            *CLI,
            "--run-spec", str(EXAMPLE / "run_spec.json"),
            "--channel", f"train={channels / 'train'}",
            "--channel", f"validation={channels / 'validation'}",
            "--run-dir", str(run_dir),
            "--json",
        ],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    first, last = summary["attempts"][0], summary["attempts"][-1]

    # max_depth 10, eta 0.9, no minimum child weight: the validation logloss is best at round 0 and climbs; the
    # in-job Overtraining rule fires at round 10 (its patience_validation) and its StopTraining ends boosting there.
    assert (first["outcome"], first["rule"], first["issue_step"]) == ("issues_found", "Overtraining", 10)
    assert first["failure_reason"].startswith("StopTraining: rule Overtraining found an issue at step 10")
    assert first["training_steps"] == 11 < first["hyperparameters"]["num_round"]
    assert first["exit_code"] == 3 and first["objective_value"] is None

    # The planner's first remedy for overtraining trees brings them into XGBoost's usual range together, and says why.
    assert first["decision"] == "GentlerTrees"
    decision = json.loads((run_dir / "final-payload.json").read_text())["state"]["attempts"][0]["decision"]
    assert decision["cause"] == "Overtraining"
    assert decision["evidence"] == [{"test": "hyperparameters_above", "measured": 0.9, "bound": 0.3}]  # eta 0.9 > 0.3
    assert {name: (change["before"], change["after"]) for name, change in decision["changes"].items()} == {
        "num_round": (100, 200), "max_depth": (10, 6), "eta": (0.9, 0.3), "min_child_weight": (0, 1.0),
        "early_stopping_rounds": (0, 5),
    }  # fmt: skip
    assert last["hyperparameters"] == {
        **first["hyperparameters"],
        "num_round": 200, "max_depth": 6, "eta": 0.3, "min_child_weight": 1, "early_stopping_rounds": 5,
    }  # fmt: skip

    # The relaunch completes with quiet rules (early stopping ends boosting at its best round) and meets the objective.
    assert summary["launches"] == 2 and last["outcome"] == "completed"
    assert last["training_steps"] < 200  # early stopping ended it
    assert summary["objective"] == {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.95}
    assert summary["objective_value"] >= 0.95 and summary["successful_job"] == last["job_name"]

    # The jobs ran as SageMaker's XGBoost container runs script mode, with the XGBoost hook's collections.
    payload = json.loads((run_dir / "final-payload.json").read_text())["state"]
    assert (payload["run_spec"]["framework"], payload["run_spec"]["framework_version"]) == ("xgboost", "3.2-0")
    log = (run_dir / "jobs" / last["job_name"] / "training.log").read_text()
    assert log.startswith("image sagemaker-xgboost:3.2-0 (XGBoost 3.2.0): runs here on this machine's Python")
    assert "validation-accuracy=" in log and "remediation_" not in log.replace(last["job_name"], "")
    assert (run_dir / "jobs" / last["job_name"] / "model" / "xgboost-model").is_file()
    bucket = summary["execution_input"]["bucket"]
    debug = run_dir / "buckets" / bucket / "debug-output" / last["job_name"]
    status = json.loads((debug / "rule-status.json").read_text())
    assert {rule["RuleConfigurationName"]: rule["RuleEvaluationStatus"] for rule in status["rules"]} == {
        "Overtraining": "NoIssuesFound",
        "LossNotDecreasing": "NoIssuesFound",
    }
    assert status["metrics"]["validation:accuracy"]["value"] == pytest.approx(summary["objective_value"], abs=1e-4)
