"""The run's figure: what a user sees on it, asserted on its artists and texts."""

from __future__ import annotations

import math

import pytest

from contracts.progress_log import format_step_line
from remediate import run_figure


def steps(count: int, *, explode_at: int | None = None, warmup_steps: int | None = None, lr: float = 0.1):
    rows = []
    for step in range(count):
        bad = explode_at is not None and step >= explode_at
        phase = "warmup" if warmup_steps is None or step < warmup_steps else "main"
        rows.append({"kind": "training_step", "step": step, "epoch": 0, "phase": phase,
                     "loss": math.nan if bad else 2.0 / (step + 1), "learning_rate": lr if phase == "main" else lr / 10,
                     "gradient_norm": math.inf if bad else 300.0 + step})  # fmt: skip
    return rows


ATTEMPTS = [
    {"number": 1, "job_name": "job-001", "rule": "ExplodingTensor", "issue_step": 2, "decision": "AddBatchNorm",
     "outcome": "issues_found", "result": "stopped by ExplodingTensor at step 2", "objective_value": None,
     "held_out_accuracy": None},
    {"number": 2, "job_name": "job-002", "rule": None, "issue_step": None, "decision": None, "outcome": "completed",
     "result": "completed", "objective_value": 0.97, "held_out_accuracy": 0.97},
]  # fmt: skip
OBJECTIVE = {"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9}


@pytest.fixture
def figure():
    figure = run_figure.training_curves_figure(
        ATTEMPTS, {"job-001": steps(3, explode_at=2), "job-002": steps(12, warmup_steps=5)}, OBJECTIVE
    )
    yield figure
    figure.clear()


def test_the_title_says_what_happened(figure):
    (title,) = [text.get_text() for text in figure.texts]
    assert title.splitlines() == [
        "Attempt 2 of 2 attempts succeeded (test:accuracy 0.97)",
        "1: stopped by ExplodingTensor at step 2 -> AddBatchNorm",
        "2: completed",
    ]


def test_panels_loss_gradient_norm_and_learning_rate_with_one_line_per_attempt(figure):
    loss, norm, learning_rate = figure.axes
    assert [axis.get_ylabel() for axis in figure.axes] == ["loss", "total gradient norm", "learning rate"]
    for axis in figure.axes:
        curves = [line for line in axis.get_lines() if line.get_gid() != "warmup-end"]
        assert [line.get_label() for line in curves] == ["attempt 1", "attempt 2 (test:accuracy 0.97)"]
    # attempt 2's learning rate steps up at the warmup's end
    assert list(learning_rate.get_lines()[1].get_ydata()) == pytest.approx([0.01] * 5 + [0.1] * 7)
    assert loss.get_yscale() == "log" and norm.get_yscale() == "log" and learning_rate.get_yscale() == "linear"


def test_the_rule_that_fired_is_marked_and_named_at_its_step(figure):
    norm = figure.axes[1]
    (marker,) = [collection for collection in norm.collections if collection.get_gid() == "rule-fired"]
    # at the issue step, at the last finite gradient norm before it
    assert marker.get_offsets().tolist() == [[2.0, 301.0]]
    names = [text.get_text() for text in norm.texts if text.get_gid() == "rule-name"]
    assert names == ["ExplodingTensor (attempt 1, step 2)"]
    crosses = [collection for collection in figure.axes[0].collections if collection.get_gid() == "non-finite"]
    assert crosses and crosses[0].get_offsets().tolist()[0][0] == 2.0


def test_the_warmup_main_boundary_is_drawn_on_every_panel(figure):
    for axis in figure.axes:
        boundaries = [line for line in axis.get_lines() if line.get_gid() == "warmup-end"]
        assert [list(line.get_xdata()) for line in boundaries] == [[5, 5]]
    assert any("warmup ends (2)" in text.get_text() for text in figure.axes[-1].texts)


def test_a_run_without_success_says_so_and_reads_from_a_run_directory(tmp_path):
    import json

    job_dir = tmp_path / "jobs" / "job-001"
    job_dir.mkdir(parents=True)
    lines = [format_step_line(step=s["step"], epoch=0, phase=s["phase"], loss=s["loss"], learning_rate=s["learning_rate"],
                              gradient_norm=s["gradient_norm"]) for s in steps(3, explode_at=2)]  # fmt: skip
    (job_dir / "training.log").write_text("starting\n" + "\n".join(lines) + "\n")
    (tmp_path / "summary.json").write_text(json.dumps({"attempts": ATTEMPTS[:1], "objective": OBJECTIVE}))
    figure = run_figure.figure_for_run_dir(tmp_path)
    assert figure.texts[0].get_text().startswith("No attempt succeeded in 1 attempt\n")
    assert list(figure.axes[0].get_lines()[0].get_xdata()) == [0, 1]  # the non-finite step is the cross, not a point
