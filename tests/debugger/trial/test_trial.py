"""The trial reader on runs still in progress (a real writer process) and on a run killed mid-write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from debugger import create_trial
from debugger.storage.layout import STEPS_DIR

WRITER = Path(__file__).with_name("writer_job.py")


def start_writer(out_dir: Path, steps: int, pause: float, width: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(out_dir), str(steps), str(pause), str(width)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(process: subprocess.Popen, prefix: str, timeout: float = 300.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith(prefix):
            return line
        if not line and process.poll() is not None:
            raise AssertionError(f"writer exited early: {process.stderr.read()}")
    raise AssertionError(f"no line starting {prefix!r} within {timeout}s")


@pytest.mark.process
def test_reader_follows_a_running_job(tmp_path):
    writer = start_writer(tmp_path, steps=8, pause=0.3, width=8)
    try:
        wait_for_line(writer, "step 1")
        trial = create_trial(tmp_path)
        trial.wait_for_steps([1])  # step files are written by the hook's background thread
        seen_while_running = trial.steps()
        assert seen_while_running[:2] == [0, 1] and not trial.training_ended()
        assert trial.rule_status() is not None and not trial.rule_status().training_ended
        wait_for_line(writer, "step 4")
        new_steps = trial.refresh()
        assert new_steps and min(new_steps) == seen_while_running[-1] + 1
        assert trial.steps() == list(range(max(trial.steps()) + 1))
        assert writer.wait(timeout=300) == 0, writer.stderr.read()
    finally:
        writer.kill()
    trial.refresh()
    assert trial.steps() == list(range(8)) and trial.training_ended()
    weight = trial.tensor("0.weight")
    assert weight.value(7).shape == (8, 8)
    assert weight.reduction_values(7) == {}  # only the reductions saved are listed (none were configured)
    assert weight.reduction_value(7, "l2") == pytest.approx(float(np.linalg.norm(weight.value(7))))
    assert weight.reduction_value(7, "nonfinite_count") == 0
    assert weight.reduction_value(7, "min") <= weight.reduction_value(7, "mean") <= weight.reduction_value(7, "max")
    assert not np.array_equal(weight.value(0), weight.value(7))  # the optimizer moved the weights


def _kill_writer_mid_write(out_dir):
    """Start a writer, SIGKILL it while a step's temporary file is open; True when the kill landed mid-write."""
    # ~17 MB per step (two 1,024 x 1,024 float32 tensors, weights and gradients): the kill is sent while the
    # temporary file of a step is being written, i.e. mid-write.
    writer = start_writer(out_dir, steps=10_000, pause=0.0, width=1024)
    steps_dir = out_dir / STEPS_DIR
    try:
        wait_for_line(writer, "step 2")
        deadline = time.monotonic() + 300
        # steps are written by the hook's background thread, which makes the steps directory with the first one (on
        # a busy machine, after the script printed step 2): wait for two complete ones and a third in progress
        def written() -> list[str]:
            return os.listdir(steps_dir) if steps_dir.is_dir() else []

        while not (
            len([name for name in written() if name.endswith(".npz")]) >= 2 and any(name.endswith(".tmp") for name in written())
        ):
            assert time.monotonic() < deadline, "the writer never wrote another step"
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=300)
    finally:
        writer.kill()
    return any(name.endswith(".tmp") for name in os.listdir(steps_dir))


@pytest.mark.process
def test_run_killed_mid_write_stays_readable_up_to_its_last_complete_step(tmp_path):
    # The write may complete between seeing its temporary file and the kill: try again in a fresh directory.
    for attempt in range(5):
        out_dir = tmp_path / f"run{attempt}"
        out_dir.mkdir()
        if _kill_writer_mid_write(out_dir):
            break
    else:
        raise AssertionError("the kill never landed mid-write in 5 tries")
    tmp_path = out_dir
    trial = create_trial(tmp_path)
    steps = trial.steps()
    # steps are written in order by one background thread: the ones on disk are complete and consecutive
    assert steps == list(range(len(steps))) and len(steps) >= 2
    assert not trial.training_ended()
    last = steps[-1]
    assert trial.tensor("gradient/0.weight").value(last).shape == (1024, 1024)
    assert trial.tensor("0.weight").reduction_value(last, "nonfinite_count") == 0


def test_a_trial_opened_before_its_job_wrote_anything_waits_for_the_output_as_smdebug_does(tmp_path, caplog):
    # an analysis started with its training job (the AWS guide's real-time analysis) opens the trial before the
    # hook created its directory: smdebug waits, looking every 2 seconds; so does ours, and says after 10 looks
    # that the path may be wrong
    from debugger.trial import trial as trial_module

    out = tmp_path / "not-yet"
    looks = []

    def sleep(seconds):
        looks.append(seconds)
        if len(looks) == trial_module.LOOKS_BEFORE_WARNING + 1:
            out.mkdir()  # the job starts writing

    with caplog.at_level("WARNING", logger="debugger.trial"):
        trial_module.wait_for_local_output(out, sleep=sleep)
    assert looks == [trial_module.OUTPUT_POLL_SECONDS] * (trial_module.LOOKS_BEFORE_WARNING + 1)
    assert [record.getMessage() for record in caplog.records] == [
        f"waiting for the training job's debug output at {out}; if this has been a while, check that the trial "
        "points at the hook's out_dir (DEBUG_OUTPUT_DIR) or the job's S3 output path"
    ]
    assert trial_module.create_trial(out).steps() == []  # then it opens, and follows the job as it writes
