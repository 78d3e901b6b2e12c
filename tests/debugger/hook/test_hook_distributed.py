"""The hook under torch.distributed: per-rank recording, one stop for every rank, one rule-status document."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from contracts.rule_status import RULE_STATUS_FILE
from debugger.core.exceptions import InvalidWorker
from debugger.trial import create_trial

pytestmark = pytest.mark.training

JOB = Path(__file__).with_name("distributed_job.py")
REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_ranks(out_dir: Path, steps: int, poison_rank: int, poison_step: int, world_size: int = 2) -> list[dict]:
    port = free_port()
    processes = []
    for rank in range(world_size):
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_RANK": "0",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "OMP_NUM_THREADS": "1",
        }
        env.pop("DEBUG_OUTPUT_DIR", None)
        arguments = [str(out_dir), str(steps), str(poison_rank), str(poison_step)]
        processes.append(
            subprocess.Popen([sys.executable, str(JOB), *arguments], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return sorted(results, key=lambda result: result["rank"])


def test_an_explosion_on_rank_1_stops_both_ranks_at_that_step_with_one_document_from_rank_0(tmp_path):
    out_dir = tmp_path / "debug"
    results = run_ranks(out_dir, steps=12, poison_rank=1, poison_step=5)

    # Rank 0's own gradients stayed finite, yet it stopped at the very step rank 1's rule fired.
    assert [result["stopped_at"] for result in results] == [5, 5]
    for result in results:
        assert result["stop"].startswith("StopTraining: rule ExplodingTensor found an issue at step 5")
    assert "on worker_1 (rank 1 of 2)" in results[0]["stop"]

    # One rule-status document, rank 0's, naming the rule, the step and the rank that found it.
    documents = sorted(path.relative_to(out_dir).as_posix() for path in out_dir.rglob(RULE_STATUS_FILE))
    assert documents == [RULE_STATUS_FILE]
    status = json.loads((out_dir / RULE_STATUS_FILE).read_text())
    (rule,) = status["rules"]
    assert rule["RuleConfigurationName"] == "ExplodingTensor" and rule["RuleEvaluationStatus"] == "IssuesFound"
    assert rule["issue"]["step"] == 5 and "worker_1" in rule["issue"]["message"]
    assert status["evidence"]["first_issue_step"] == 5
    assert [(action["action"], action["step"]) for action in status["actions"]] == [("StopTraining", 5)]


def test_every_rank_records_its_own_tensors_and_a_trial_reads_them_per_worker(tmp_path):
    out_dir = tmp_path / "debug"
    results = run_ranks(out_dir, steps=6, poison_rank=-1, poison_step=-1)
    assert [result["stopped_at"] for result in results] == [None, None]
    assert (out_dir / "workers" / "worker_1" / "steps").is_dir()
    assert not (out_dir / "workers" / "worker_1" / RULE_STATUS_FILE).exists()

    trial = create_trial(out_dir)
    assert trial.workers() == ["worker_0", "worker_1"]
    name = "gradient/0.weight"
    assert trial.tensor(name).workers(4) == ["worker_0", "worker_1"]
    mine, theirs = trial.tensor(name).value(4, worker="worker_0"), trial.tensor(name).value(4, worker="worker_1")
    assert mine.shape == theirs.shape == (16, 8) and not np.allclose(mine, theirs)  # each rank's own data
    assert np.array_equal(trial.tensor(name).value(4), mine)  # no worker: the chief's, as smdebug's first worker
    assert trial.tensor(name).reduction_value(4, "l2", worker="worker_1") == pytest.approx(np.linalg.norm(theirs))
    with pytest.raises(InvalidWorker):
        trial.tensor(name).value(4, worker="worker_7")
    json.loads((out_dir / RULE_STATUS_FILE).read_text())  # the chief's document, ended cleanly


def test_a_workers_own_output_opens_as_that_workers_trial(tmp_path):
    out_dir = tmp_path / "debug"
    run_ranks(out_dir, steps=4, poison_rank=-1, poison_step=-1)
    worker = create_trial(out_dir).worker_trial("worker_1")
    assert worker.workers() == ["worker_1"] and worker.steps() == [0, 2]
    assert worker.tensor("gradient/0.weight").workers(2) == ["worker_1"]
