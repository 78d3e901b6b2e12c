"""Training on two instances through the local state machine: a DDP script (examples/ddp) on two ranks (gloo on CPU),
each rank a process with SageMaker's environment, remediated like a single-process job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.rule_status import RULE_STATUS_FILE

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ddp"
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]


def run_cli(*arguments: str, timeout: float = 420) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *arguments], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def run_spec_file(tmp_path: Path, **changes) -> Path:
    spec = json.loads((EXAMPLE / "run_spec.json").read_text())
    spec["source_dir"] = str(EXAMPLE)
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    path = tmp_path / "run_spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_an_explosion_on_one_rank_stops_both_ranks_at_that_step_and_is_remediated(tmp_path):
    run_dir = tmp_path / "run"
    finished = run_cli("--run-spec", str(EXAMPLE / "run_spec.json"), "--run-dir", str(run_dir), "--json")
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    attempts = summary["attempts"]
    assert [row["outcome"] for row in attempts] == ["issues_found", "completed"]
    exploded = attempts[0]
    assert exploded["rule"] == "ExplodingTensor" and exploded["decision"] == "NormalizeInputs"
    step = exploded["issue_step"]
    assert attempts[1]["hyperparameters"]["normalize-inputs"] == 1
    assert summary["objective_value"] >= 0.9 and summary["successful_job"] == attempts[1]["job_name"]

    # Rank 1's shard exploded; rank 0's gradients were finite, yet both stopped at that step with the rule's text.
    job_dir = run_dir / "jobs" / exploded["job_name"]
    hosts = {"algo-1": job_dir, "algo-2": job_dir / "hosts" / "algo-2"}
    failures = {host: (directory / "output" / "failure").read_text() for host, directory in hosts.items()}
    for text in failures.values():
        assert text.startswith(f"StopTraining: rule ExplodingTensor found an issue at step {step}:")
    assert failures["algo-1"].endswith("on worker_1 (rank 1 of 2)")
    assert "rank 0 of 2 on algo-1" in (hosts["algo-1"] / "training.log").read_text()  # a log per host
    assert "rank 1 of 2 on algo-2" in (hosts["algo-2"] / "training.log").read_text()

    # One rule-status document, written by rank 0, naming the rule and the step; rank 1's own tensors beside it.
    debug_output = run_dir / "buckets" / summary["execution_input"]["bucket"] / "debug-output" / exploded["job_name"]
    assert [path.relative_to(debug_output).as_posix() for path in debug_output.rglob(RULE_STATUS_FILE)] == [
        RULE_STATUS_FILE
    ]
    status = json.loads((debug_output / RULE_STATUS_FILE).read_text())
    fired = [rule for rule in status["rules"] if rule["RuleEvaluationStatus"] == "IssuesFound"]
    assert [(rule["RuleConfigurationName"], rule["issue"]["step"]) for rule in fired] == [("ExplodingTensor", step)]
    assert any((debug_output / "workers" / "worker_1" / "steps").iterdir())

    payload = json.loads((run_dir / "final-payload.json").read_text())
    attempt = payload["state"]["attempts"][0]
    assert (attempt["issue"]["rule"], attempt["issue"]["step"]) == ("ExplodingTensor", step)
    decision = attempt["decision"]
    assert decision["cause"] == "ExplodingTensor" and decision["next_action"] == "launch_new"
    assert decision["changes"]["normalize-inputs"] == {"before": 0, "after": 1}


def test_a_healthy_two_rank_job_completes_with_each_host_forming_the_group_from_sm_hosts(tmp_path):
    """No distribution: SageMaker runs the script once per host and the script joins the group from SM_HOSTS."""
    run_dir = tmp_path / "run"
    example = json.loads((EXAMPLE / "run_spec.json").read_text())
    spec = run_spec_file(  # the run_spec the remediation above ends with, without a launcher
        tmp_path,
        distribution=None,
        hyperparameters={**example["hyperparameters"], "normalize-inputs": 1},
        remedies={"ExplodingTensor": example["remedies"]["ExplodingTensor"][1:]},
    )
    finished = run_cli("--run-spec", str(spec), "--run-dir", str(run_dir), "--json")
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    assert [row["outcome"] for row in summary["attempts"]] == ["completed"]
    assert summary["objective_value"] >= 0.9
    job_dir = run_dir / "jobs" / summary["attempts"][0]["job_name"]
    assert "rank 1 of 2 on algo-2" in (job_dir / "hosts" / "algo-2" / "training.log").read_text()
    assert (job_dir / "model" / "model.pt").exists()  # rank 0 saves the model
    assert not (job_dir / "hosts" / "algo-2" / "model" / "model.pt").exists()


@pytest.mark.parametrize(("count", "says"), [(0, "must be from 1 to 20 per job"), (5, "on the local training platform")])
def test_bad_instance_counts_stop_the_command_before_anything_starts(tmp_path, count, says):
    run_dir = tmp_path / "run"
    finished = run_cli("--run-spec", str(run_spec_file(tmp_path, instance_count=count)), "--run-dir", str(run_dir))
    assert finished.returncode == 2, finished.stderr[-2000:]
    assert "instance_count" in finished.stderr and says in finished.stderr
    assert not run_dir.exists()
