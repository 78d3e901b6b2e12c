"""Plain training scripts (no smdebug import, no hook: examples/plain, examples/plain_xgboost) remediated through the
state machine locally: the job's debugger watches them with zero script change."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.step_names import step_name

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
PLAIN = REPO / "examples" / "plain"
PLAIN_XGBOOST = REPO / "examples" / "plain_xgboost"
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]

#: Runs examples/plain/train.py as it is, with an observer of its optimizer steps (PyTorch's global pre-hook, no
#: debugger): the index of the first step whose loss or gradient norm is not finite, and how many steps ran.
FIRST_NONFINITE_STEP = """
import json, math, runpy, sys
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

seen = {"steps": 0, "first_nonfinite": None}
losses = []
original_backward = torch.autograd.backward

def backward(tensors, *args, **kwargs):
    losses.append(float(tensors.detach()))
    return original_backward(tensors, *args, **kwargs)

def observe(optimizer, args, kwargs):
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    finite = math.isfinite(float(torch.nn.utils.get_total_norm(grads))) and math.isfinite(losses[-1])
    if not finite and seen["first_nonfinite"] is None:
        seen["first_nonfinite"] = seen["steps"]
    seen["steps"] += 1

torch.autograd.backward = backward
register_optimizer_step_pre_hook(observe)
sys.argv = ["train.py", *sys.argv[1:]]
runpy.run_path(sys.argv.pop(1), run_name="__main__")
print(json.dumps(seen))
"""


def run_cli(*arguments: str, timeout: float = 420) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *arguments], capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def blobs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("blobs")
    subprocess.run([sys.executable, str(REPO / "examples" / "mlp" / "make_data.py"), "--out", str(out)], check=True, capture_output=True)
    return out / "train"


def test_the_plain_scripts_have_no_debugger_in_them():
    for script in (PLAIN / "train.py", PLAIN_XGBOOST / "train.py"):
        imports = [line for line in script.read_text().splitlines() if line.startswith(("import ", "from "))]
        assert not [line for line in imports if "smdebug" in line or "debugger" in line], imports


def test_a_plain_exploding_pytorch_script_is_stopped_at_its_first_nonfinite_step_and_repaired(tmp_path, blobs):
    # Where the script, left alone at lr 20, first produces a non-finite loss or gradient (no debugger involved).
    observed = subprocess.run(
        [sys.executable, "-c", FIRST_NONFINITE_STEP, str(PLAIN / "train.py"), "--lr", "20", "--epochs", "1",
         "--train", str(blobs), "--model-dir", str(tmp_path / "observed-model")],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    first_nonfinite = json.loads(observed.stdout.strip().splitlines()[-1])["first_nonfinite"]
    assert first_nonfinite is not None and first_nonfinite < 25  # within the first epoch (25 steps)

    run_dir = tmp_path / "run"
    finished = run_cli("--run-spec", str(PLAIN / "run_spec.json"), "--channel", f"train={blobs}", "--run-dir", str(run_dir), "--json")
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    attempts = summary["attempts"]

    # lr 20: ExplodingTensor at that very step, and StopTraining ends the job there (no step after it).
    exploded = attempts[0]
    assert (exploded["outcome"], exploded["rule"], exploded["issue_step"]) == ("issues_found", "ExplodingTensor", first_nonfinite)
    assert exploded["failure_reason"].startswith(f"StopTraining: rule ExplodingTensor found an issue at step {first_nonfinite}")
    assert exploded["training_steps"] == first_nonfinite + 1 and exploded["exit_code"] == 3
    # The declared remedies lower lr tenfold until a job meets the objective: at lr 2 the huge first steps kill the
    # ReLU units (VanishingGradient); lr 0.2 trains.
    assert [row["hyperparameters"]["lr"] for row in attempts] == [20, pytest.approx(2.0), pytest.approx(0.2)]
    assert [row["rule"] for row in attempts[:2]] == ["ExplodingTensor", "VanishingGradient"]
    assert [row["decision"] for row in attempts] == ["LowerLearningRate", "LowerLearningRate", None]
    assert attempts[-1]["outcome"] == "completed" and summary["objective_value"] >= 0.9
    assert summary["successful_job"] == attempts[-1]["job_name"]

    # The debugger watched the script it was given, unchanged, as the jobs' logs and debug output show.
    log = (run_dir / "jobs" / exploded["job_name"] / "training.log").read_text()
    assert "zero script change: the script creates no hook" in log
    bucket = run_dir / "buckets" / summary["execution_input"]["bucket"] / "debug-output"
    # Messages name the script's optimizer step (contracts.step_names): the status document carries it beside the
    # global step (the script's per-epoch evaluation passes are global steps), and the report and the planner's
    # reason say it, with the global step where the two differ.
    for row in attempts[:2]:
        document = json.loads((bucket / row["job_name"] / "rule-status.json").read_text())
        issue = next(rule["issue"] for rule in document["rules"] if rule["issue"])
        named = step_name(issue["step"], issue["optimizer_step"], issue["evaluation_pass"], with_global=True)
        assert issue["optimizer_step"] is not None and row["issue_step_name"] == named
        assert row["result"] == f"stopped by {row['rule']} at {named}"
        assert f"fired at {named}" in row["decision_reason"], row["decision_reason"]
    status = json.loads((bucket / attempts[-1]["job_name"] / "rule-status.json").read_text())
    assert {rule["RuleEvaluationStatus"] for rule in status["rules"]} == {"NoIssuesFound"} and status["training_ended"]
    assert math.isfinite(status["evidence"]["initial_loss"]) and status["evidence"]["initial_gradient_norm"] > 0


def test_a_compiled_plain_script_is_stopped_at_its_first_nonfinite_step_and_repaired(tmp_path, blobs):
    """examples/plain with --compile true: torch.compile's default backend (inductor) in every job, watched from
    outside the compiled graph, repaired by the example's declared remedies."""
    observed = subprocess.run(
        [sys.executable, "-c", FIRST_NONFINITE_STEP, str(PLAIN / "train.py"), "--lr", "20", "--epochs", "1",
         "--compile", "true", "--train", str(blobs), "--model-dir", str(tmp_path / "observed-model")],
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    first_nonfinite = json.loads(observed.stdout.strip().splitlines()[-1])["first_nonfinite"]
    assert first_nonfinite is not None and first_nonfinite < 25

    spec = json.loads((PLAIN / "run_spec.json").read_text())
    spec["source_dir"] = str(PLAIN)
    spec["hyperparameters"].update({"compile": "true", "epochs": 3})
    (tmp_path / "run_spec.json").write_text(json.dumps(spec))
    run_dir = tmp_path / "run"
    finished = run_cli("--run-spec", str(tmp_path / "run_spec.json"), "--channel", f"train={blobs}", "--run-dir", str(run_dir),
                       "--json", timeout=1800)  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    attempts = summary["attempts"]
    exploded = attempts[0]
    assert (exploded["outcome"], exploded["rule"], exploded["issue_step"]) == ("issues_found", "ExplodingTensor", first_nonfinite)
    assert exploded["training_steps"] == first_nonfinite + 1
    assert all(row["hyperparameters"]["compile"] == "true" for row in attempts)
    assert attempts[-1]["outcome"] == "completed" and summary["objective_value"] >= 0.9
    assert [row["decision"] for row in attempts[:-1]] == ["LowerLearningRate"] * (len(attempts) - 1)
    log = (run_dir / "jobs" / exploded["job_name"] / "training.log").read_text()
    assert "[debugger] watching the compiled Sequential from outside its graph" in log


def test_a_plain_xgboost_script_is_stopped_by_its_rule_and_repaired(tmp_path):
    channels = tmp_path / "data"
    subprocess.run([sys.executable, str(REPO / "examples" / "xgboost" / "make_data.py"), "--out", str(channels)], check=True, capture_output=True)
    run_dir = tmp_path / "run"
    finished = run_cli(
        "--run-spec", str(PLAIN_XGBOOST / "run_spec.json"),
        "--channel", f"train={channels / 'train'}", "--channel", f"validation={channels / 'validation'}",
        "--run-dir", str(run_dir), "--json", timeout=300,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    first, last = summary["attempts"][0], summary["attempts"][-1]
    # max_depth 10, eta 0.9: the validation loss is best at round 0; Overtraining stops boosting at round 10
    assert (first["outcome"], first["rule"], first["issue_step"]) == ("issues_found", "Overtraining", 10)
    assert first["failure_reason"].startswith("StopTraining: rule Overtraining found an issue at step 10")
    assert first["training_steps"] == 11 and first["decision"] == "GentlerTrees"
    assert (last["hyperparameters"]["max_depth"], last["hyperparameters"]["eta"]) == (6, 0.3)
    assert summary["launches"] == 2 and last["outcome"] == "completed" and summary["objective_value"] >= 0.95
    log = (run_dir / "jobs" / first["job_name"] / "training.log").read_text()
    assert "zero script change: the script creates no hook, so the job's debugger watches its xgboost.train call" in log
