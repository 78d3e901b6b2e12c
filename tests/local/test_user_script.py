"""A user's own script (examples/mlp, written for SageMaker Debugger) remediated through the state machine locally,
by the remedies and the objective its run_spec declares."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mlp"
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]


def run_cli(*arguments: str, cwd: Path = REPO, timeout: float = 420) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *arguments], capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("blobs")
    subprocess.run([sys.executable, str(EXAMPLE / "make_data.py"), "--out", str(out)], check=True, capture_output=True)
    return out / "train"


def test_an_exploding_script_is_remediated_by_its_declared_remedies_until_it_meets_the_objective(tmp_path, blobs):
    run_dir = tmp_path / "run"
    finished = run_cli(
        "--run-spec", str(EXAMPLE / "run_spec.json"), "--channel", f"train={blobs}", "--run-dir", str(run_dir), "--json"
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    attempts = summary["attempts"]
    # lr 20 explodes; clipped, its huge steps kill the ReLU units (zero gradients: VanishingGradient); at lr 2 the
    # loss spikes (about 80x its first step) and comes back, an excursion for LossNotDecreasing (decision 185), and
    # the accuracy stalls far from the objective (ObjectiveOutOfReach); lr 0.2 trains
    assert [row["outcome"] for row in attempts] == ["issues_found", "issues_found", "objective_missed", "completed"]
    assert [row["rule"] for row in attempts[:3]] == ["ExplodingTensor", "VanishingGradient", "ObjectiveOutOfReach"]
    assert [(row["hyperparameters"]["lr"], row["hyperparameters"]["grad-clip"]) for row in attempts] == [
        (20, 0),
        (20, 1.0),
        (pytest.approx(2.0), 1.0),
        (pytest.approx(0.2), 1.0),
    ]
    assert [row["decision"] for row in attempts] == ["ClipGradients", "LowerLearningRate", "LowerLearningRate", None]
    exploded = attempts[0]
    assert exploded["rule"] == "ExplodingTensor" and exploded["issue_step"] < 25  # within the first epoch
    assert exploded["objective_value"] is None
    assert summary["objective"] == {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9}
    assert summary["objective_value"] >= 0.9 and summary["successful_job"] == attempts[-1]["job_name"]

    # The decisions answer what fired with the declared changes, on the job's evidence; the notifications report
    # the objective value.
    payload = json.loads((run_dir / "final-payload.json").read_text())
    first, second = (attempt["decision"] for attempt in payload["state"]["attempts"][:2])
    assert (first["cause"], first["changes"]) == ("ExplodingTensor", {"grad-clip": {"before": 0, "after": 1.0}})
    assert payload["state"]["attempts"][0]["evidence"]["initial_gradient_norm"] > 0
    assert second["cause"] == "VanishingGradient"
    assert second["changes"] == {"lr": {"before": 20, "after": pytest.approx(2.0)}}
    notifications = json.loads((run_dir / "notifications.json").read_text())
    assert "validation:accuracy" in notifications[-1]["subject"]

    # The script ran unchanged: it got its own arguments only, and the launcher wrote smdebug's config file.
    log = (run_dir / "jobs" / attempts[0]["job_name"] / "training.log").read_text()
    assert "remediation_" not in log.replace(attempts[0]["job_name"], "")
    assert "device: cpu (SM_NUM_GPUS=0)" in log  # the platform's CPU instance: the script says where it trains
    status = json.loads(
        (run_dir / "buckets" / summary["execution_input"]["bucket"] / "debug-output" / attempts[-1]["job_name"]
         / "rule-status.json").read_text()
    )
    assert status["metrics"]["validation:accuracy"]["value"] == pytest.approx(summary["objective_value"], abs=1e-4)


def test_a_script_that_meets_its_objective_succeeds_at_the_first_launch(tmp_path, blobs):
    finished = run_cli(
        "--run-spec",
        str(EXAMPLE / "run_spec.json"),
        "--channel",
        f"train={blobs}",
        "--hyperparameters",
        "lr=0.05",
        "--run-dir",
        str(tmp_path / "run"),
        "--json",
    )
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    assert summary["launches"] == 1 and summary["launches_until_success"] == 1
    assert summary["attempts"][0]["hyperparameters"] == {"lr": 0.05, "grad-clip": 0, "epochs": 5}
    # the script's own held-out accuracy, and which metric it is (the built-in example's comes from its epoch lines)
    assert summary["held_out_accuracy"] == summary["objective_value"] >= 0.9
    assert summary["held_out_accuracy_metric"] == "validation:accuracy"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--source-dir", str(EXAMPLE), "--entry-point", "missing.py"], "entry_point missing.py: not found in source_dir"),
        (["--source-dir", str(EXAMPLE / "absent"), "--entry-point", "train.py"], "no such directory"),
        (["--entry-point", "train.py"], "source_dir: is required with entry_point"),
        (
            ["--run-spec", str(EXAMPLE / "run_spec.json"), "--hyperparameters", "lr=0.05", "--objective", "acc=0.9"],
            "--objective 'acc=0.9': write METRIC>=TARGET",
        ),
        (["--run-spec", str(EXAMPLE / "run_spec.json"), "--channel", "train"], "--channel 'train': write NAME=DIR"),
        (["--run-spec", str(EXAMPLE / "run_spec.json"), "--channel", "train=/no/such/dir"], "--channel train=/no/such/dir"),
    ],
)
def test_a_bad_script_declaration_fails_before_anything_starts(tmp_path, arguments, message):
    run_dir = tmp_path / "run"
    finished = run_cli(*arguments, "--run-dir", str(run_dir), timeout=300)
    assert finished.returncode == 2, finished.stderr
    assert message in finished.stderr
    assert "Traceback" not in finished.stderr
    assert not run_dir.exists(), "nothing was started"


def test_bad_remedies_fail_before_anything_starts(tmp_path, blobs):
    spec = json.loads((EXAMPLE / "run_spec.json").read_text())
    spec["source_dir"] = str(EXAMPLE)
    spec["remedies"]["ExplodingTensor"].append({"hyperparameter": "learning_rate", "multiply_by": 0.5})
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    finished = run_cli("--run-spec", str(path), "--channel", f"train={blobs}", "--run-dir", str(tmp_path / "run"))
    assert finished.returncode == 2
    assert (
        "remedies.ExplodingTensor[2].hyperparameter: 'learning_rate' is not in run_spec.hyperparameters "
        "(known: epochs, grad-clip, lr)" in finished.stderr
    )
    assert not (tmp_path / "run").exists()
