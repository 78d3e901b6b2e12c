"""A job that steps its optimizer with a closure (LBFGS: each closure evaluation a global step, as smdebug numbers
them) reclaimed by the local platform's spot interruption and restarted from its checkpoint: the restarted run's
first non-finite step is named by the optimizer steps, counted on from the checkpoint (the state the hook keeps
beside it carries the count), as the same job without interruptions names it; SGD's names are unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "fixtures" / "closure_spot"
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]
#: The script's optimizer step whose loss is infinite, after a restart from the checkpoint after step 3.
BLOW_AT = 9
#: Global steps an optimizer step: LBFGS evaluates its closure 3 times.
PER_STEP = {"lbfgs": 3, "sgd": 1}


def local_run(tmp_path: Path, name: str, optimizer: str, interruptions: list) -> dict:
    spec = {
        "source_dir": str(SCRIPT), "entry_point": "train.py", "instance_type": "local", "max_num_retraining": 1,
        "hyperparameters": {"optimizer": optimizer, "blow-at": BLOW_AT, "hold-at": 5 if interruptions else -1},
        "debugger_save_interval": 1,  # every step written: the platform sees each go by
    }  # fmt: skip
    if interruptions:
        spec["spot_interruptions"] = interruptions
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    finished = subprocess.run(
        [*CLI, "--run-spec", str(path), "--run-dir", str(tmp_path / name), "--num-threads", "1", "--json"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )  # fmt: skip
    # no job succeeds (the blow-up is in the script, and one launch is allowed): the run ends FAILED, exit code 1
    assert finished.returncode == 1 and finished.stdout, finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    assert summary["execution_status"] == "FAILED" and summary["launches"] == 1
    return summary


@pytest.mark.parametrize("optimizer", ["lbfgs", "sgd"])
def test_a_restarted_closure_job_names_its_first_nonfinite_step_by_its_optimizer_steps(tmp_path, optimizer):
    # reclaimed once the debugger has written optimizer step 4's last global step (the steps the platform sees): past
    # the checkpoint after step 3, and the script holds after step 5 until then
    at_step = 5 * PER_STEP[optimizer] - 1
    summary = local_run(tmp_path, "spot", optimizer, [{"at_step": at_step}])
    (job,) = summary["attempts"]
    assert len(job["spot_interruptions"]) == 1 and job["spot_interruptions"][0]["restored_files"] >= 1
    log = Path(job["log"]).read_text()
    assert log.count("the instance was reclaimed") == 1 and "resuming from checkpoint-0000.pt at epoch 1" in log

    global_step = BLOW_AT * PER_STEP[optimizer]
    said = f"step {BLOW_AT}" + (f" (saved as global step {global_step})" if global_step != BLOW_AT else "")
    assert (job["rule"], job["issue_step"], job["issue_step_name"]) == ("ExplodingTensor", global_step, said)
    assert job["failure_reason"].startswith(f"StopTraining: rule ExplodingTensor found an issue at {said}: ")

    # as the same job names it without interruptions
    (alone,) = local_run(tmp_path, "alone", optimizer, [])["attempts"]
    assert (alone["issue_step"], alone["issue_step_name"]) == (global_step, said)
