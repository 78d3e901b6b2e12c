"""`remediate local run` end to end: the real CLI, state machine, handlers and training on generated data."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import processes_in_group

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]


def run_cli(*arguments: str, timeout: float = 420, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *arguments], capture_output=True, text=True, timeout=timeout, cwd=cwd)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def assert_plot_has_content(path: Path) -> None:
    width, height = png_size(path)
    assert width >= 400 and height >= 300
    import matplotlib.image

    pixels = matplotlib.image.imread(path)
    rgb = pixels[..., :3]
    coloured = ((rgb.max(axis=-1) - rgb.min(axis=-1)) > 0.2).mean()
    assert coloured > 0.001, "the plot has no coloured (curve) pixels"


def test_default_run_adds_batch_norm_after_the_explosion_and_completes(tmp_path):
    """As the README's main command runs it: no options, so the run directory is relative (runs/<time>-evidence)."""
    finished = run_cli("--json", cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr[-4000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.endswith("-evidence")
    summary = json.loads(finished.stdout)
    assert summary == json.loads((run_dir / "summary.json").read_text())

    first, *rest = summary["attempts"]
    assert first["hyperparameters"]["add_batch_norm"] is False
    assert first["hyperparameters"]["warmup_learning_rate"] == pytest.approx(0.1)
    assert first["rule"] == "ExplodingTensor"
    assert first["status"] in ("Stopped", "Failed") and first["status"] != "Completed"
    if first["status"] == "Failed":
        assert first["failure_reason"].startswith("StopTraining: rule ExplodingTensor")
    assert first["training_steps"] < 20, "the explosion is caught within the first epoch"
    assert rest and rest[0]["hyperparameters"]["add_batch_norm"] is True
    assert summary["successful_job"] == rest[-1]["job_name"] and rest[-1]["status"] == "Completed"
    assert summary["launches_until_success"] <= 2
    assert summary["objective"] == {"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9}
    assert summary["objective_value"] >= 0.9 and summary["held_out_accuracy"] == summary["objective_value"]
    assert first["objective_value"] is None and rest[-1]["objective_value"] == summary["objective_value"]
    assert summary["execution_status"] == "SUCCEEDED"
    assert summary["training_processes_left"] == []
    # How long it took is a figure (summary.json's wall_seconds, in the README), not a test: the machine may be busy.
    assert summary["wall_seconds"] > summary["orchestration_overhead_seconds"] >= 0

    # Notifications arrived, in order, one per step of the loop at least.
    notifications = json.loads((run_dir / "notifications.json").read_text())
    stamps = [item["timestamp"] for item in notifications]
    assert stamps == sorted(stamps)
    assert summary["notifications"] == len(notifications)
    events = [item["attributes"]["event_type"] for item in notifications]
    launches = len(summary["attempts"])
    assert events == ["job_launched", *(["issues_found", "job_launched"] * (launches - 1)), "completed"]
    assert "ExplodingTensor" in notifications[1]["subject"]

    # The run directory holds everything promised.
    history = json.loads((run_dir / "execution-history.json").read_text())
    assert history[0]["type"] == "ExecutionStarted" and history[-1]["type"] == "ExecutionSucceeded"
    payload = json.loads((run_dir / "final-payload.json").read_text())
    assert [a["job_name"] for a in payload["state"]["attempts"]] == [a["job_name"] for a in summary["attempts"]]
    assert json.loads((run_dir / "execution.json").read_text())["status"] == "SUCCEEDED"
    bucket_dir = run_dir / "buckets" / summary["execution_input"]["bucket"]
    for attempt in summary["attempts"]:
        job = attempt["job_name"]
        assert "training_step" in (run_dir / "jobs" / job / "training.log").read_text()
        assert (bucket_dir / "debug-output" / job / "rule-status.json").is_file()
    assert (bucket_dir / "jobs" / summary["successful_job"] / "output" / "model.tar.gz").stat().st_size > 1000
    assert_plot_has_content(run_dir / "training-curves.png")


def test_anchor_policy_climbs_the_samples_ladder(tmp_path):
    run_spec = tmp_path / "anchor.json"
    run_spec.write_text(
        json.dumps({"policy": "anchor", "num_epochs": 1, "max_num_retraining": 3, "monitor_interval_seconds": 1})
    )
    run_dir = tmp_path / "run"
    finished = run_cli(
        "--run-spec", str(run_spec), "--run-dir", str(run_dir), "--train-samples", "1024", "--num-threads", "1", "--json"
    )  # fmt: skip
    assert finished.returncode in (0, 1), finished.stderr[-4000:]
    summary = json.loads(finished.stdout)
    for attempt in summary["attempts"]:  # --num-threads reaches every job's framework
        assert "; 1 threads" in (run_dir / "jobs" / attempt["job_name"] / "training.log").read_text()
    ladder = [
        (row["hyperparameters"]["warmup_learning_rate"], row["hyperparameters"]["add_batch_norm"]) for row in summary["attempts"]
    ]
    # The blog's fixed ladder: halve the warmup learning rate, batch norm only later.
    assert ladder == [(pytest.approx(0.1), False), (pytest.approx(0.05), False), (pytest.approx(0.025), False)]
    assert all(row["rule"] == "ExplodingTensor" for row in summary["attempts"])
    # The budget (max_num_retraining 3: three launches, as the sample counts them) is spent before the ladder
    # reaches batch norm: the execution gives up.
    assert summary["execution_status"] == "FAILED" and summary["end_reason"]
    assert summary["successful_job"] is None and finished.returncode == 1
    assert summary["training_processes_left"] == []


def test_ctrl_c_stops_the_execution_and_every_training_process(tmp_path):
    run_dir = tmp_path / "run"
    # Batch norm from the start: a stable job that keeps training until it is interrupted.
    run_spec = tmp_path / "stable.json"
    run_spec.write_text(json.dumps({"add_batch_norm": True, "num_epochs": 20}))
    process = subprocess.Popen(
        [*CLI, "--run-spec", str(run_spec), "--run-dir", str(run_dir), "--stop-grace-seconds", "5"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        job_pids = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not job_pids:
            time.sleep(0.5)
            for log in run_dir.glob("jobs/*/training.log"):
                if "training_step" in log.read_text():
                    job_pids = _training_process_pids(run_dir)
        assert job_pids, "no training process was seen running"
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    left = [pid for pid in job_pids if processes_in_group(pid)]
    _kill_groups(left)  # whatever the outcome, the test leaves nothing running
    assert process.returncode == 130, output[-3000:]
    assert left == [], f"training process groups {left} still had processes"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert summary["execution_status"] in ("ABORTED", "FAILED")
    assert summary["training_processes_left"] == []
    assert summary["attempts"][-1]["status"] == "Stopped"
    assert "interrupted" in output and summary["execution_status"] in output


def _training_process_pids(run_dir: Path) -> list[int]:
    """Training processes are `python train.py` with their cwd in the run directory's job folders."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd.startswith(str(run_dir / "jobs")):
            pids.append(int(entry))
    return pids


def test_a_bad_run_spec_field_fails_before_any_training_starts(tmp_path):
    run_spec = tmp_path / "bad.json"
    run_spec.write_text(json.dumps({"init_warmup_learning_rate": -1, "policy": "anchor"}))
    run_dir = tmp_path / "run"
    finished = run_cli("--run-spec", str(run_spec), "--run-dir", str(run_dir), timeout=300)
    assert finished.returncode == 2
    assert "init_warmup_learning_rate" in finished.stderr and "must be > 0" in finished.stderr
    assert not (run_dir / "jobs").exists(), "no training job may start for a bad run_spec"

    run_spec.write_text(json.dumps({"warmup_learnin_rate": 0.1}))
    finished = run_cli("--run-spec", str(run_spec), "--run-dir", str(run_dir), timeout=300)
    assert finished.returncode == 2
    assert "warmup_learnin_rate" in finished.stderr and "not a known key" in finished.stderr


def test_training_processes_die_with_a_killed_cli(tmp_path):
    """kill -9 leaves the CLI no chance to clean up: the kernel ends its jobs (PR_SET_PDEATHSIG)."""
    run_dir = tmp_path / "run"
    run_spec = tmp_path / "stable.json"
    run_spec.write_text(json.dumps({"add_batch_norm": True, "num_epochs": 20}))
    process = subprocess.Popen(
        [*CLI, "--run-spec", str(run_spec), "--run-dir", str(run_dir)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        job_pids: list[int] = []
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not job_pids:
            time.sleep(0.5)
            job_pids = _training_process_pids(run_dir)
        assert job_pids, "no training process was seen running"
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and any(processes_in_group(pid) for pid in job_pids):
        time.sleep(0.2)
    left = [pid for pid in job_pids if processes_in_group(pid)]
    _kill_groups(left)  # whatever the outcome, the test leaves nothing running
    assert left == []


def _kill_groups(pgids: list[int]) -> None:
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_data_directory_without_channels_is_refused_before_anything_starts(tmp_path):
    (tmp_path / "data" / "train").mkdir(parents=True)
    finished = run_cli("--data", str(tmp_path / "data"), "--run-dir", str(tmp_path / "run"), timeout=300)
    assert finished.returncode == 2
    assert "--data" in finished.stderr and "x.npy" in finished.stderr
    assert not (tmp_path / "run").exists()
