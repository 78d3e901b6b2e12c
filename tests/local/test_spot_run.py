"""Spot interruptions end to end: `remediate local run` on the built-in example with its jobs' instances reclaimed
twice (run_spec spot_interruptions). The job restarts from its restored checkpoints, its trial has each step once,
the workflow keeps waiting through the interruptions, and remediation proceeds as without them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from debugger import create_trial

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]
#: 512 generated samples at the example's batch of 128: 4 steps per epoch, a checkpoint after steps 3, 7, 11, ...
STEPS_PER_EPOCH = 4
EPOCHS = 6


def test_a_spot_run_interrupted_twice_resumes_from_its_checkpoints_and_remediation_proceeds(tmp_path):
    run_spec = tmp_path / "spot.json"
    run_spec.write_text(
        json.dumps(
            {
                "instance_type": "local",
                # the first job explodes at step 2, before either; the second (batch norm added) is reclaimed twice
                "spot_interruptions": [{"at_step": 6}, {"at_step": 14}],
                "num_epochs": EPOCHS,
                "debugger_save_interval": 1,
                "monitor_interval_seconds": 1,
            }
        )
    )
    run_dir = tmp_path / "run"
    finished = subprocess.run(
        [*CLI, "--run-spec", str(run_spec), "--run-dir", str(run_dir), "--train-samples", "512", "--test-samples",
         "128", "--num-threads", "1", "--json"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)

    # Remediation proceeds as it does without interruptions: the explosion, batch norm, a completed job.
    exploded, repaired = summary["attempts"]
    assert exploded["rule"] == "ExplodingTensor" and exploded["spot_interruptions"] == []
    assert repaired["hyperparameters"]["add_batch_norm"] is True and repaired["status"] == "Completed"
    assert summary["execution_status"] == "SUCCEEDED" and summary["successful_job"] == repaired["job_name"]
    assert summary["objective_value"] >= 0.9

    # The repaired job was reclaimed twice, after the steps asked, and each restart found checkpoints in S3.
    interruptions = repaired["spot_interruptions"]
    assert [item["requested"] for item in interruptions] == ["at step 6", "at step 14"]
    assert interruptions[0]["at_step"] >= 6 and interruptions[1]["at_step"] >= 14
    assert all(item["restored_files"] >= 1 for item in interruptions)
    log = Path(repaired["log"]).read_text()
    assert log.count("the instance was reclaimed") == 2
    resumed = [int(epoch) for epoch in re.findall(r"resuming from checkpoint .*: epoch (\d+) done", log)]
    assert len(resumed) == 2 and resumed[0] < resumed[1], "each restart resumed from its newest checkpoint"
    # the job went on through both interruptions: one job, one attempt, the workflow waited instead of relaunching
    assert summary["launches"] == 2

    # Each step once: the log's steps (those redone after a restart counted once) and the debugger's trial.
    steps = EPOCHS * STEPS_PER_EPOCH
    assert repaired["training_steps"] == steps and repaired["last_step"] == steps - 1
    debug_dir = run_dir / "buckets" / summary["execution_input"]["bucket"] / "debug-output" / repaired["job_name"]
    trial = create_trial(debug_dir)
    assert trial.steps() == list(range(steps))
    status = trial.rule_status()
    assert status.training_ended and status.last_step == steps - 1 and status.issues_found() == []
    # the hook kept its state beside the checkpoints, and numbered each restarted run from it
    checkpoints = run_dir / "buckets" / summary["execution_input"]["bucket"] / "checkpoints" / repaired["job_name"]
    states = json.loads((checkpoints / "metadata.json").read_text())
    runs = [state["training-run"] for state in states]
    assert runs == sorted(runs) and len(set(runs)) >= 2
    assert all((state["latest-global-step-seen"] + 1) % STEPS_PER_EPOCH == 0 for state in states)
