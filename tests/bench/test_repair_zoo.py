"""bench/repair_zoo.py as a user runs it: a failing scenario repaired, a healthy one left alone, the listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ZOO = ROOT / "bench" / "repair_zoo.py"


def _zoo(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ZOO), *arguments], capture_output=True, text=True, cwd=cwd, timeout=900)


def test_the_zoo_lists_every_rule_it_covers_with_failing_healthy_and_data_error_scenarios():
    listing = _zoo("--list")
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    kinds = [line.split()[1] for line in lines]
    assert kinds.count("failing") >= 14 and kinds.count("healthy") >= 4 and "data_error" in kinds
    assert "resnet-explode" in listing.stdout and "mlp-healthy-digits" in listing.stdout


def test_an_unknown_scenario_is_refused_with_the_way_to_list_them():
    finished = _zoo("--scenario", "no-such-thing")
    assert finished.returncode == 2 and "--list" in finished.stderr


def test_a_drawn_zoo_restricted_to_a_style_refuses_one_it_does_not_know(tmp_path):
    finished = _zoo("--random", "2", "--seed", "2002", "--space", "v2", "--style", "no_such_style", "--work-dir", str(tmp_path))
    assert finished.returncode == 2
    assert "--style: no_such_style is no script style or model family; choose from " in finished.stderr
    assert "hf_trainer" in finished.stderr and "transformer" in finished.stderr
    assert _zoo("--style", "hf_trainer").returncode == 2  # the fixed zoo has no drawing to restrict


@pytest.mark.training
def test_a_failing_scenario_is_repaired_and_a_healthy_one_raises_no_alarm(tmp_path):
    finished = _zoo("--scenario", "mlp-explode", "--scenario", "mlp-healthy-digits", "--policies", "none,evidence",
                    "--work-dir", str(tmp_path), "--markdown", str(tmp_path / "zoo.md"))
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(finished.stdout)
    explode, healthy = report["scenarios"]
    assert explode["runs"]["none"]["first_rule"] == "ExplodingTensor"
    assert explode["runs"]["none"]["met_objective"] is False and explode["runs"]["none"]["launches"] == 1
    assert explode["runs"]["evidence"]["met_objective"] is True and explode["runs"]["evidence"]["launches"] >= 2
    assert explode["verdict"] == {"detected": True, "repaired": True, "compute_ratio": explode["verdict"]["compute_ratio"],
                                  "reference_met_objective": True}  # fmt: skip
    assert 1.0 <= explode["verdict"]["compute_ratio"] <= 1.5
    assert healthy["verdict"]["false_alarm"] is False and healthy["runs"]["evidence"]["launches"] == 1
    assert report["summary"]["repair_rate"] == 1.0 and report["summary"]["false_alarms"] == 0
    table = (tmp_path / "zoo.md").read_text()
    assert "| mlp-explode | mlp, blobs | ExplodingTensor | ExplodingTensor (" in table
    assert "median launches to the objective" in table


@pytest.mark.training
def test_a_rare_class_is_weighted_and_the_weighted_job_is_not_stopped_again_on_the_same_data(tmp_path):
    """ClassImbalance at its documented threshold_imbalance 10 fires on the label counts (about 20); class weights
    answer that without changing the counts, so the next job's bound is raised and it trains to the objective."""
    finished = _zoo("--scenario", "mlp-rare-class", "--policies", "evidence", "--work-dir", str(tmp_path))
    assert finished.returncode == 0, finished.stderr[-3000:]
    report = json.loads(finished.stdout)
    scenario = report["scenarios"][0]
    evidence = scenario["runs"]["evidence"]
    assert evidence["first_rule"] == "ClassImbalance" and evidence["rules_fired"] == ["ClassImbalance"]
    assert evidence["remedies"][0] == "WeightClasses"
    assert evidence["met_objective"] is True and evidence["launches"] == 2
    # The compute target's yardstick: the configuration it ended with (class weights, the raised bound), run once.
    reference = scenario["reference"]
    assert reference["launches"] == 1 and reference["rules_fired"] == [] and reference["met_objective"] is True
    assert evidence["final_run_spec"]["hyperparameters"]["class-weighting"] == "balanced"
    ratio = evidence["training_steps"] / reference["training_steps"]
    assert scenario["verdict"]["compute_ratio"] == round(ratio, 2)
    assert report["summary"]["median_launches_to_objective"] == 2 and report["summary"]["compute_ratios_measured"] == 1
