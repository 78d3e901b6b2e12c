"""The run's figure for users' own scripts, from real runs: each panel holds, for every attempt, the points the job
saved. Two scripts: ``examples/mlp`` (SageMaker Debugger's smdebug API; prints only its own epoch lines, no progress
lines, and saves evaluation steps too) and a fixture that prints progress lines with the step and loss only. The
expected points are read here straight from each job's files: its log, and its TensorBoard event files with
TensorBoard's own reader."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from contracts.progress_log import parse_progress_line
from remediate import run_figure

pytestmark = pytest.mark.training

REPO = Path(__file__).resolve().parents[2]
OWN_PROGRESS_LINES = Path(__file__).parent / "fixtures" / "own_progress_lines"


def remediate_run(tmp_path: Path, run_spec: dict, data: Path) -> Path:
    spec = tmp_path / "run_spec.json"
    spec.write_text(json.dumps(run_spec))
    run_dir = tmp_path / "run"
    finished = subprocess.run(
        [sys.executable, "-m", "remediate.main", "local", "run", "--run-spec", str(spec), "--channel", f"train={data}",
         "--run-dir", str(run_dir), "--num-threads", "1", "--json"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr[-4000:]
    return run_dir


@pytest.fixture(scope="module")
def blobs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("blobs")
    subprocess.run([sys.executable, str(REPO / "examples" / "mlp" / "make_data.py"), "--out", str(out), "--samples", "400"],
                   check=True, capture_output=True)  # fmt: skip
    return out / "train"


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory, blobs) -> Path:
    """lr 20 explodes (ExplodingTensor); lr 0.2 completes: two attempts of a script that prints no progress lines."""
    return remediate_run(tmp_path_factory.mktemp("mlp"), {
        "source_dir": str(REPO / "examples" / "mlp"), "entry_point": "train.py",
        "hyperparameters": {"lr": 20.0, "epochs": 2},
        "metric_definitions": [{"Name": "validation:accuracy", "Regex": "val_accuracy=([0-9.]+)"}],
        "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.5},
        "remedies": {"ExplodingTensor": [{"hyperparameter": "lr", "set_to": 0.2}]},
        "max_num_retraining": 2,
    }, blobs)  # fmt: skip


@pytest.fixture(scope="module")
def own_lines_run(tmp_path_factory, blobs) -> Path:
    """lr 1e38 overflows at step 1 (ExplodingTensor); lr 0.5 completes: a script whose own progress lines carry the
    step and the loss only."""
    return remediate_run(tmp_path_factory.mktemp("own-lines"), {
        "source_dir": str(OWN_PROGRESS_LINES), "entry_point": "train.py",
        "hyperparameters": {"lr": 1e38, "steps": 12},
        "metric_definitions": [{"Name": "train:accuracy", "Regex": "train_accuracy=([0-9.]+)"}],
        "objective": {"metric_name": "train:accuracy", "type": "Maximize", "target_value": 0.5},
        "remedies": {"ExplodingTensor": [{"hyperparameter": "lr", "set_to": 0.5}]},
        "max_num_retraining": 2,
    }, blobs)  # fmt: skip


def attempts(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "summary.json").read_text())["attempts"]


def saved_scalars(run_dir: Path, job_name: str) -> dict[str, list[tuple[int, float]]]:
    """The job's TensorBoard scalars (tag -> [(step, value)]), read with TensorBoard's reader."""
    (directory,) = run_dir.glob(f"buckets/*/debug-output/{job_name}/tensorboard-output")
    accumulator = EventAccumulator(str(directory), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {tag: [(event.step, event.value) for event in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


def line_points(axis, number: int) -> list[tuple[int, float]]:
    (line,) = [line for line in axis.get_lines() if line.get_label().startswith(f"attempt {number}") and line.get_gid() is None]
    return [(int(x), float(y)) for x, y in line.get_xydata()]


def finite(points):
    return [(step, value) for step, value in points if math.isfinite(value)]


def test_a_script_without_progress_lines_gets_every_point_its_jobs_saved_for_every_attempt(mlp_run):
    figure = run_figure.figure_for_run_dir(mlp_run)
    loss, norm, rate = figure.axes
    rows = attempts(mlp_run)
    assert [row["rule"] for row in rows] == ["ExplodingTensor", None]
    for row in rows:
        saved = saved_scalars(mlp_run, row["job_name"])
        assert len(saved["gradient_norm/total"]) > 3  # every training step, not the save interval's
        assert line_points(norm, row["number"]) == finite(saved["gradient_norm/total"])
        # the training loss only: the script's evaluation steps (smdebug's EVAL mode) are not on this panel
        assert line_points(loss, row["number"]) == finite(saved["loss"])
        # the script registers no optimizer with the hook; the debugger sees the one it creates and saves its rate
        assert line_points(rate, row["number"]) == finite(saved["learning_rate"])
    assert [line_points(rate, row["number"])[0][1] for row in rows] == [20.0, pytest.approx(0.2)]
    assert not [line for line in rate.get_lines() if line.get_gid() == "launched-learning-rate"]
    # the rule's marker sits on the last finite gradient norm up to its step, not at a made-up 1.0
    exploded = rows[0]
    (marker,) = [c for c in norm.collections if c.get_gid() == "rule-fired"]
    last = [value for step, value in finite(saved_scalars(mlp_run, exploded["job_name"])["gradient_norm/total"])
            if step <= exploded["issue_step"]][-1]  # fmt: skip
    assert marker.get_offsets().tolist() == [[exploded["issue_step"], last]]
    assert (mlp_run / "training-curves.png").stat().st_size > 0


def test_a_script_printing_some_progress_fields_gets_the_rest_from_its_debugger_step_by_step(own_lines_run):
    figure = run_figure.figure_for_run_dir(own_lines_run)
    loss, norm, rate = figure.axes
    rows = attempts(own_lines_run)
    assert [row["rule"] for row in rows] == ["ExplodingTensor", None]
    for row in rows:
        log = (own_lines_run / "jobs" / row["job_name"] / "training.log").read_text().splitlines()
        printed = [parsed for parsed in map(parse_progress_line, log) if parsed]
        assert printed and all("gradient_norm" not in step for step in printed)
        # the loss as the script printed it (its 6 decimals), the gradient norm as the debugger saved it
        assert line_points(loss, row["number"]) == [(step["step"], step["loss"]) for step in printed if math.isfinite(step["loss"])]
        saved = saved_scalars(own_lines_run, row["job_name"])
        assert line_points(norm, row["number"]) == finite(saved["gradient_norm/total"])
    completed = rows[1]
    assert [step for step, _ in line_points(norm, completed["number"])] == list(range(12))
    # the rate as the debugger saved it from the script's optimizer, for every attempt
    assert [line_points(rate, row["number"])[0][1] for row in rows] == [pytest.approx(1e38), pytest.approx(0.5)]
    assert not [line for line in rate.get_lines() if line.get_gid() == "launched-learning-rate"]
