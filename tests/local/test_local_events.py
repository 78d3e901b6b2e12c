"""The local runtime runs the event-driven wait as the cloud does: the training platform announces the job's final
status, the local event bus matches it with the stack's rule and the real job-events handler ends the wait, long
before the fallback poll."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.training  # a real job process (no torch)

REPO = Path(__file__).resolve().parents[2]
SCRIPT = "import time\ntime.sleep(3)\nprint('trained for 3 s', flush=True)\n"


def test_a_jobs_state_change_ends_the_local_wait_long_before_the_fallback(tmp_path):
    source = tmp_path / "project"
    source.mkdir()
    (source / "train.py").write_text(SCRIPT)
    spec = tmp_path / "run_spec.json"
    spec.write_text(json.dumps({"source_dir": str(source), "entry_point": "train.py", "monitor_interval_seconds": 300}))
    run_dir = tmp_path / "run"
    started = time.monotonic()
    finished = subprocess.run(
        [sys.executable, "-m", "remediate.main", "local", "run", "--run-spec", str(spec), "--run-dir", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    seconds = time.monotonic() - started

    # The script reports no rule status, so the loop ends (MissingEvidence): what matters here is how the wait ended.
    assert finished.returncode == 1, finished.stdout[-3000:] + finished.stderr[-3000:]
    assert seconds < 120, f"{seconds:.0f} s: the wait was not ended by the job's state change (fallback: 300 s)"
    history = json.loads((run_dir / "execution-history.json").read_text())
    woken = [
        json.loads(event["taskSucceededEventDetails"]["output"])
        for event in history
        if event["type"] == "TaskSucceeded" and "waitForTaskToken" in event["taskSucceededEventDetails"]["resource"]
    ]
    assert [wake["woken_by"] for wake in woken] == ["job_state_change"]
    assert woken[0]["TrainingJobStatus"] == "Completed"
    assert not [event for event in history if event["type"] == "TaskTimedOut"]
    entered = [event["stateEnteredEventDetails"]["name"] for event in history if "stateEnteredEventDetails" in event]
    assert entered.count("Monitor") == 1
