"""Ctrl-C and SIGTERM at any moment of `remediate local run`, a training process killed by the kernel, and two
runs started in the same instant: the real CLI as a process, as a user runs it."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remediate.run_directory import CLAIM_FILE, claim_run_dir

from .conftest import processes_in_group

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "remediate.main", "local", "run"]


def start_cli(*arguments: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, *arguments],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80"},
    )


def read_until(process: subprocess.Popen, fragment: str, timeout: float = 300.0) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if fragment in line:
            return lines
    raise AssertionError(f"never printed {fragment!r}: {''.join(lines)[-2000:]}")


def job_processes(run_dir: Path) -> dict[str, int]:
    """job name -> pid of every process whose working directory is a job folder of this run."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if cwd.startswith(str(run_dir.resolve() / "jobs") + "/"):
                found[Path(cwd).relative_to(run_dir.resolve() / "jobs").parts[0]] = int(entry)
    return found


def finish(process: subprocess.Popen, timeout: float = 90) -> str:
    try:
        output, _ = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return output


def wait_for_training(run_dir: Path, job_index: int = 0, timeout: float = 120) -> tuple[str, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = sorted((run_dir / "jobs").glob("*")) if (run_dir / "jobs").exists() else []
        if len(jobs) > job_index and "training_step" in _read(jobs[job_index] / "training.log"):
            pids = job_processes(run_dir)
            if jobs[job_index].name in pids:
                return jobs[job_index].name, pids[jobs[job_index].name]
        time.sleep(0.2)
    raise AssertionError(f"job {job_index + 1} never trained")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def assert_interrupted(output: str, run_dir: Path, signal_name: str, during: str, code: int, returncode: int) -> dict:
    assert returncode == code, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    last = [line for line in output.splitlines() if line.startswith("interrupted by")]
    assert last and f"interrupted by {signal_name}" in last[-1] and f"during {during}" in last[-1], output[-2000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert summary["interruption"]["signal"] == signal_name and summary["interruption"]["during"] == during
    # The CLI runs on the real clock (a process the tests start is not moved by --clock-shift-days): the signal
    # arrived shortly before summary.json was written, whose modification time the kernel stamps.
    at = dt.datetime.fromisoformat(summary["interruption"]["at"]).timestamp()
    written = (run_dir / "summary.json").stat().st_mtime
    assert written - 300 <= at <= written + 1
    assert summary["training_processes_left"] == []
    assert job_processes(run_dir) == {}, "a training process outlived the CLI"
    assert summary["execution_status"] != "RUNNING"
    for row in summary["attempts"]:
        assert row["status"] != "InProgress" and row["result"] != "still running"
    return summary


# --------------------------------------------------------------------------- run directories


def _claim(now: dt.datetime, root: str, queue) -> None:
    os.chdir(root)
    queue.put(str(claim_run_dir(None, "evidence", now)))


def test_runs_started_in_the_same_second_get_their_own_directories(tmp_path):
    now = dt.datetime(2026, 1, 2, 3, 4, 5)
    context = multiprocessing.get_context("fork")  # each a process of its own, racing for the same name
    queue = context.Queue()
    workers = [context.Process(target=_claim, args=(now, str(tmp_path), queue)) for _ in range(6)]
    for worker in workers:
        worker.start()
    claimed = sorted(queue.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(10)
    assert len(set(claimed)) == 6
    assert claimed[0] == "runs/20260102-030405-evidence"
    assert {path.name for path in (tmp_path / "runs").iterdir()} == {Path(name).name for name in claimed}
    assert all((tmp_path / name / CLAIM_FILE).is_file() for name in claimed)


def test_an_empty_run_dir_is_claimed_once(tmp_path):
    (tmp_path / "run").mkdir()
    assert claim_run_dir(tmp_path / "run", "evidence") == tmp_path / "run"
    with pytest.raises(ValueError, match="already holds files"):
        claim_run_dir(tmp_path / "run", "evidence")


# --------------------------------------------------------------------------- signals


@pytest.mark.process
def test_ctrl_c_during_set_up_exits_130_with_nothing_left(tmp_path):
    process = start_cli("--train-samples", "256", "--test-samples", "64", cwd=tmp_path)
    try:
        read_until(process, "run directory:")
        process.send_signal(signal.SIGINT)  # the local account is being set up: nothing has trained yet
    finally:
        output = finish(process)
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = assert_interrupted(output, run_dir, "SIGINT", "set-up", 130, process.returncode)
    assert summary["attempts"] == [] and not (run_dir / "jobs").exists()


@pytest.mark.training
def test_two_runs_started_together_then_sigterm_mid_training(tmp_path):
    spec = tmp_path / "stable.json"
    spec.write_text(json.dumps({"add_batch_norm": True, "num_epochs": 20}))
    runs = [start_cli("--run-spec", str(spec), "--train-samples", "512", "--test-samples", "64", cwd=tmp_path) for _ in range(2)]
    try:
        run_dirs: list[Path] = []
        deadline = time.monotonic() + 300
        while len(run_dirs) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            run_dirs = sorted((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else []
        assert len(run_dirs) == 2, "two runs, two run directories"
        for run_dir in run_dirs:
            wait_for_training(run_dir)
        for process in runs:
            process.send_signal(signal.SIGTERM)
    finally:
        for process in runs:
            if process.poll() is None and process.returncode is None:
                process.send_signal(signal.SIGTERM)  # whatever failed above, leave nothing running
        outputs = [finish(process) for process in runs]
    for process, output in zip(runs, outputs, strict=True):
        directory = next(line.split(": ", 1)[1].strip() for line in output.splitlines() if line.startswith("run directory:"))
        summary = assert_interrupted(output, tmp_path / directory, "SIGTERM", "training", 143, process.returncode)
        assert summary["attempts"][-1]["result"] == "stopped when the loop ended"


@pytest.mark.training
def test_ctrl_c_mid_training_exits_130_and_stops_every_training_process(tmp_path):
    spec = tmp_path / "stable.json"
    spec.write_text(json.dumps({"add_batch_norm": True, "num_epochs": 20}))
    run_dir = tmp_path / "run"
    process = start_cli("--run-spec", str(spec), "--run-dir", str(run_dir), "--train-samples", "512", cwd=tmp_path)
    try:
        _, pid = wait_for_training(run_dir)
        process.send_signal(signal.SIGINT)
    finally:
        output = finish(process)
    summary = assert_interrupted(output, run_dir, "SIGINT", "training", 130, process.returncode)
    assert processes_in_group(pid) == []
    assert summary["execution_status"] == "ABORTED"
    assert summary["attempts"][-1]["status"] == "Stopped"


@pytest.mark.training
def test_a_training_process_killed_by_sigkill_is_reported_and_remediated_with_a_smaller_batch(tmp_path):
    """The kernel's out-of-memory killer sends SIGKILL: the attempt reads 'killed by SIGKILL (out of memory)'
    with its peak memory, and the evidence remedies relaunch with half the batch and half the learning rates."""
    spec = tmp_path / "stable.json"
    spec.write_text(json.dumps({"add_batch_norm": True, "num_epochs": 20}))
    run_dir = tmp_path / "run"
    process = start_cli("--run-spec", str(spec), "--run-dir", str(run_dir), "--train-samples", "512", cwd=tmp_path)
    try:
        first, pid = wait_for_training(run_dir)
        os.kill(pid, signal.SIGKILL)
        wait_for_training(run_dir, job_index=1)  # the relaunch trains
        process.send_signal(signal.SIGTERM)
    finally:
        output = finish(process)
    summary = assert_interrupted(output, run_dir, "SIGTERM", "training", 143, process.returncode)
    killed, relaunched = summary["attempts"][:2]
    assert killed["job_name"] == first and killed["outcome"] == "out_of_memory"
    assert killed["killed_by_signal"] == "SIGKILL" and killed["peak_memory_bytes"] > 50 << 20
    assert killed["result"].startswith("killed by SIGKILL (out of memory), peak memory ")
    assert killed["failure_reason"].startswith("OutOfMemoryError: the training process was killed by SIGKILL")
    assert killed["decision"] == "HalveBatchSize"
    assert relaunched["hyperparameters"]["batch_size"] == 64
    assert relaunched["hyperparameters"]["learning_rate"] == pytest.approx(0.05)
    assert relaunched["hyperparameters"]["warmup_learning_rate"] == pytest.approx(0.05)
    assert "killed by SIGKILL" in output  # the table says it, in words


#: In a process of its own (the runtime takes over logging and moto's process-wide patches): Ctrl-C lands on the
#: first line of mock_aws.start(); then a fake account is set up again in the same process.
INTERRUPTED_START = """
import json, os, sys
from moto.core.models import MockAWS
from local_runtime.runtime import LocalRuntime, RuntimeOptions

run_dir = sys.argv[1]
started = MockAWS.start
def interrupted_start(self, reset=True):
    raise KeyboardInterrupt
MockAWS.start = interrupted_start
before = dict(os.environ)
try:
    with LocalRuntime(RuntimeOptions(run_dir=run_dir + "/first")):
        pass
    seen = "nothing"
except KeyboardInterrupt:
    seen = "KeyboardInterrupt"
environment_undone = dict(os.environ) == before
MockAWS.start = started
with LocalRuntime(RuntimeOptions(run_dir=run_dir + "/next")) as runtime:
    buckets = len(runtime.client("s3").list_buckets()["Buckets"])
print(json.dumps({"seen": seen, "environment_undone": environment_undone, "buckets": buckets}))
"""


@pytest.mark.process
def test_an_interrupt_inside_the_fake_accounts_start_is_the_interrupt_the_user_sees(tmp_path):
    """Ctrl-C can land inside moto's mock_aws.start(), before it counts itself started (seen once in the signal test
    above on a loaded machine: the run ended with moto's "Called stop() before start()" traceback instead of exit 130).
    The interrupt must come through as it is, and moto's own count of started mocks stay right: a fake account still
    starts afterwards in the same process, and talks to moto, not to AWS."""
    finished = subprocess.run([sys.executable, "-c", INTERRUPTED_START, str(tmp_path)], capture_output=True, text=True,
                              timeout=300, cwd=REPO)  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-3000:]
    result = json.loads(finished.stdout.strip().splitlines()[-1])
    assert result == {"seen": "KeyboardInterrupt", "environment_undone": True, "buckets": 1}
