"""The run's figure: what a user sees on it, asserted on its artists and texts."""

from __future__ import annotations

import math

import pytest

from contracts.progress_log import format_step_line
from remediate import run_figure, run_steps


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
    # rates a decade apart: a logarithmic axis, as for losses and gradient norms
    assert loss.get_yscale() == "log" and norm.get_yscale() == "log" and learning_rate.get_yscale() == "log"
    legend = [text.get_text() for text in loss.get_legend().get_texts()]
    assert legend == ["attempt 1", "attempt 2 (test:accuracy 0.97)"]


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


def curve(axis, label: str):
    (line,) = [line for line in axis.get_lines() if line.get_label() == label]
    return line


def test_a_flat_learning_rate_is_drawn_at_its_value_on_an_axis_from_zero():
    """Not on a band around it (matplotlib widens a constant to 0.095..0.105 for a rate of 0.1)."""
    figure = run_figure.training_curves_figure(ATTEMPTS[1:], {"job-002": steps(12, lr=0.1, warmup_steps=0)})
    learning_rate = figure.axes[2]
    assert learning_rate.get_yscale() == "linear"
    low, high = learning_rate.get_ylim()
    assert low == 0 and 0.1 < high <= 0.12
    assert list(curve(learning_rate, "attempt 2 (accuracy 0.97)").get_ydata()) == pytest.approx([0.1] * 12)


def test_an_attempt_that_repeats_the_one_before_is_not_hidden_under_it():
    """Two attempts with the very same curves (a remedy that changed nothing the first steps show): each has its own
    colour, line style and marker, and the earlier one is drawn on top of the later, longer one."""
    attempts = [{**ATTEMPTS[0], "issue_step": None, "rule": None}, ATTEMPTS[1]]
    figure = run_figure.training_curves_figure(attempts, {"job-001": steps(60), "job-002": steps(60)})
    for axis in figure.axes:
        first, second = (line for line in axis.get_lines() if line.get_gid() != "warmup-end")
        assert list(first.get_xydata().tolist()) == list(second.get_xydata().tolist())
        assert first.get_color() != second.get_color()
        assert first.get_linestyle() != second.get_linestyle() and first.get_marker() != second.get_marker()
        assert first.get_zorder() > second.get_zorder()
        # markers at different steps, so both show where the lines coincide
        assert first.get_markevery() != second.get_markevery()


def test_a_job_that_saved_no_learning_rate_shows_the_one_it_was_launched_with_and_says_so():
    no_rate = [{key: value for key, value in step.items() if key != "learning_rate"} for step in steps(12)]
    attempt = {**ATTEMPTS[1], "hyperparameters": {"lr": 0.2, "epochs": 3}}
    figure = run_figure.training_curves_figure([attempt], {"job-002": no_rate})
    learning_rate = figure.axes[2]
    (launched,) = [line for line in learning_rate.get_lines() if line.get_gid() == "launched-learning-rate"]
    assert launched.get_xydata().tolist() == [[0, 0.2], [11, 0.2]]
    assert "the hyperparameter lr as launched" in learning_rate.get_title()
    assert [text.get_text() for text in learning_rate.texts if text.get_gid() == "launched-learning-rate-value"] == ["lr=0.2"]
    # the run_spec's hyperparameter_names says which one is the learning rate
    renamed = {**attempt, "hyperparameters": {"step-size": 0.3, "lr": 9}}
    figure = run_figure.training_curves_figure([renamed], {"job-002": no_rate}, None, {"learning_rate": "step-size"})
    (launched,) = [line for line in figure.axes[2].get_lines() if line.get_gid() == "launched-learning-rate"]
    assert launched.get_ydata().tolist() == [0.3, 0.3]


def test_a_rule_that_fired_where_no_gradient_norm_was_saved_is_marked_at_the_top_not_at_a_made_up_value():
    no_norm = [{key: value for key, value in step.items() if key != "gradient_norm"} for step in steps(3, explode_at=2)]
    figure = run_figure.training_curves_figure(ATTEMPTS[:1], {"job-001": no_norm})
    norm = figure.axes[1]
    (marker,) = [collection for collection in norm.collections if collection.get_gid() == "rule-fired"]
    # x in data (the issue step), y in axes fraction (the panel's top edge)
    assert marker.get_offsets().tolist() == [[2.0, 1.0]]
    assert marker.get_offset_transform() == norm.get_xaxis_transform()
    (name,) = [text.get_text() for text in norm.texts if text.get_gid() == "rule-name"]
    assert name == "ExplodingTensor (attempt 1, step 2; no gradient norm saved)"


def test_rules_that_fired_at_one_step_get_a_row_each():
    attempts = [{**ATTEMPTS[0], "number": number, "job_name": f"job-{number}", "issue_step": 20,
                 "rule": rule} for number, rule in ((1, "VanishingGradient"), (2, "LossNotDecreasing"))]  # fmt: skip
    figure = run_figure.training_curves_figure(attempts, {"job-1": steps(21), "job-2": steps(21)})
    rows = [text.xyann[1] for text in figure.axes[1].texts if text.get_gid() == "rule-name"]
    assert len(rows) == 2 and abs(rows[0] - rows[1]) == pytest.approx(run_figure.RULE_NAME_SPACING)


def test_a_log_with_some_fields_is_filled_in_step_by_step_from_what_the_debugger_saved():
    """A script's own progress lines with the loss only (and not at every step): the gradient norm and the learning
    rate come from the debugger's points at the same steps, its steps the log lacks are added, and where both have
    a field the log's value is drawn."""
    log = [{"kind": "training_step", "step": step, "loss": 1.0 / (step + 1)} for step in (0, 2, 4)]
    debugger = [{"kind": "training_step", "step": step, "loss": 99.0, "gradient_norm": 10.0 + step,
                 "learning_rate": 0.05} for step in range(6)]  # fmt: skip
    merged = run_steps.merge_steps(log, debugger)
    assert [step["step"] for step in merged] == [0, 1, 2, 3, 4, 5]
    figure = run_figure.training_curves_figure(ATTEMPTS[1:], {"job-002": merged})
    label = "attempt 2 (accuracy 0.97)"
    loss, norm, learning_rate = (curve(axis, label) for axis in figure.axes)
    assert loss.get_xydata().tolist() == [[0, 1.0], [1, 99.0], [2, 1 / 3], [3, 99.0], [4, 0.2], [5, 99.0]]
    assert norm.get_xydata().tolist() == [[step, 10.0 + step] for step in range(6)]
    assert learning_rate.get_ydata().tolist() == [0.05] * 6
