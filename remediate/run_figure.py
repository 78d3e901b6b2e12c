"""The run's figure (training-curves.png): what each attempt did, step by step, and what the workflow did about it.

Three panels sharing the step axis: the training loss, the total gradient norm and the learning rate, one line per
attempt. On them: a marker and the rule's name where a rule fired (the issue step), a cross where a value stopped
being finite, a dotted line where the job's warmup ended (its first main-phase step), and in each attempt's label
its objective value (or held-out accuracy). The title says what happened: how many attempts, why each ended, what
changed.

The figure is built from the summary's attempts (:func:`remediate.run_report.attempts_summary`) and each job's steps
(the progress lines of its log, :mod:`contracts.progress_log`; for a script that prints none, its debugger's saved
steps), so the same figure comes from a live platform or
from a finished run directory (:func:`figure_for_run_dir`, what the walkthrough notebook shows).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contracts.progress_log import parse_progress_line

#: The panels, top to bottom: (progress-line field, axis label, log scale).
PANELS = (("loss", "loss", True), ("gradient_norm", "total gradient norm", True), ("learning_rate", "learning rate", False))
JOBS_DIR = "jobs"
LOG_FILE = "training.log"
SUMMARY_FILE = "summary.json"
BUCKETS_DIR = "buckets"
DEBUG_OUTPUT_DIR = "debug-output"


def steps_from_log(path: Path) -> list[dict[str, Any]]:
    """The job's training steps as its progress lines say them (none for a script that prints none)."""
    if not path.exists():
        return []
    steps = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parsed = parse_progress_line(line)
        if parsed is not None and parsed["kind"] == "training_step":
            steps.append(parsed)
    return steps


def steps_from_debug_output(debug_dir: Path) -> list[dict[str, Any]]:
    """The job's saved steps as its debugger recorded them (for a script that prints no progress lines): the loss,
    total gradient norm and learning rate at each saved training step."""
    from debugger.collection import LEARNING_RATE, LOSSES
    from debugger.rules import TOTAL_GRADIENT_NORM
    from debugger.trial import create_trial

    if not Path(debug_dir).is_dir():
        return []
    trial = create_trial(debug_dir)
    losses = trial.tensor_names(collection=LOSSES)
    names = {"gradient_norm": TOTAL_GRADIENT_NORM, "loss": losses[0] if losses else None, "learning_rate": LEARNING_RATE}
    rows: dict[int, dict[str, Any]] = {}
    for field, name in names.items():
        if name is None or not trial.has_tensor(name):
            continue
        tensor = trial.tensor(name)
        for step in tensor.steps():
            rows.setdefault(step, {"kind": "training_step", "step": step})[field] = float(tensor.value(step))
    return [rows[step] for step in sorted(rows)]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def attempt_score(attempt: Mapping[str, Any], objective: Mapping[str, Any] | None) -> str:
    """'test:accuracy 0.92' (the objective's metric), 'accuracy 0.92' (held-out), or ''."""
    value = attempt.get("objective_value")
    if _finite(value) and objective:
        return f"{objective.get('metric_name')} {value:.3g}"
    accuracy = attempt.get("held_out_accuracy")
    return f"accuracy {accuracy:.3g}" if _finite(accuracy) else ""


def figure_title(attempts: Sequence[Mapping[str, Any]], objective: Mapping[str, Any] | None) -> str:
    """One line per attempt: how it ended and the remedy that followed; the first line says how the run ended."""
    if not attempts:
        return "No training job was launched"
    succeeded = [attempt for attempt in attempts if attempt.get("outcome") == "completed"]
    count = f"{len(attempts)} attempt{'s' if len(attempts) != 1 else ''}"
    if succeeded:
        score = attempt_score(succeeded[0], objective)
        headline = f"Attempt {succeeded[0]['number']} of {count} succeeded" + (f" ({score})" if score else "")
    else:
        headline = f"No attempt succeeded in {count}"
    lines = [headline]
    for attempt in attempts:
        line = f"{attempt['number']}: {attempt.get('result') or attempt.get('status') or 'unknown'}"
        if attempt.get("decision"):
            line += f" -> {attempt['decision']}"
        lines.append(line)
    return "\n".join(lines)


def warmup_end_step(steps: Sequence[Mapping[str, Any]]) -> int | None:
    """The first main-phase step after a warmup one (None: no phases, or the job never left warmup)."""
    seen_warmup = False
    for step in steps:
        if step.get("phase") == "warmup":
            seen_warmup = True
        elif step.get("phase") == "main" and seen_warmup:
            return step["step"]
    return None


def training_curves_figure(
    attempts: Sequence[Mapping[str, Any]],
    steps_by_job: Mapping[str, Sequence[Mapping[str, Any]]],
    objective: Mapping[str, Any] | None = None,
):
    """The matplotlib Figure (the caller saves or shows it, and closes it)."""
    from matplotlib.figure import Figure  # no pyplot: no global state, safe off the main thread

    figure = Figure(figsize=(10, 10))
    axes = figure.subplots(len(PANELS), 1, sharex=True)
    palette = [f"C{index}" for index in range(10)]
    for index, attempt in enumerate(attempts):
        color = palette[index % len(palette)]
        steps = steps_by_job.get(attempt["job_name"], [])
        score = attempt_score(attempt, objective)
        label = f"attempt {attempt['number']}" + (f" ({score})" if score else "")
        for axis, (field, _, _) in zip(axes, PANELS, strict=True):
            _plot_field(axis, steps, field, color, label)
        boundary = warmup_end_step(steps)
        if boundary is not None:
            for axis in axes:
                axis.axvline(boundary, color=color, linestyle=":", linewidth=1, gid="warmup-end")
            axes[-1].annotate(
                f"warmup ends ({attempt['number']})", (boundary, 0.02), xycoords=("data", "axes fraction"),
                fontsize=7, color=color, rotation=90, va="bottom", ha="right",
            )  # fmt: skip
        if attempt.get("rule") and attempt.get("issue_step") is not None:
            _mark_rule(axes[1], steps, attempt, color)
    for axis, (_, ylabel, log_scale) in zip(axes, PANELS, strict=True):
        axis.set_ylabel(ylabel)
        values = [y for line in axis.get_lines() if line.get_gid() != "warmup-end" for y in line.get_ydata(orig=True)]
        if log_scale and values and min(values) > 0:
            axis.set_yscale("log")
        axis.grid(True, alpha=0.3)
    axes[0].set_title("training loss (x: first non-finite value)", fontsize=9)
    axes[1].set_title("total gradient norm (marker: the step a rule fired)", fontsize=9)
    axes[2].set_title("learning rate (dotted: end of warmup)", fontsize=9)
    axes[-1].set_xlabel("step")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=8)
    figure.suptitle(figure_title(attempts, objective), fontsize=10, ha="left", x=0.02)
    figure.tight_layout()
    return figure


def _plot_field(axis, steps, field: str, color: str, label: str) -> None:
    points = [(step["step"], step[field]) for step in steps if _finite(step.get(field))]
    bad = [step["step"] for step in steps if field in step and not _finite(step.get(field))]
    if not points:
        return
    marker = "o" if len(points) < 40 else None  # a job stopped after a step or two is still visible
    axis.plot([p[0] for p in points], [p[1] for p in points], color=color, label=label, linewidth=1.2, marker=marker,
              markersize=3)  # fmt: skip
    if bad:
        axis.scatter([bad[0]], [points[-1][1]], marker="x", s=60, color=color, gid="non-finite")


def _mark_rule(axis, steps, attempt: Mapping[str, Any], color: str) -> None:
    """A marker and the rule's name at the issue step, at the last finite gradient norm up to it."""
    issue_step = attempt["issue_step"]
    finite = [step["gradient_norm"] for step in steps if step["step"] <= issue_step and _finite(step.get("gradient_norm"))]
    height = finite[-1] if finite else 1.0
    axis.scatter([issue_step], [height], marker="v", s=90, color=color, edgecolor="black", zorder=5, gid="rule-fired")
    axis.annotate(
        f"{attempt['rule']} (attempt {attempt['number']}, step {issue_step})", (issue_step, height),
        textcoords="offset points", xytext=(8, -4), va="top", fontsize=8, color=color, gid="rule-name",
    )  # fmt: skip


def figure_for_run_dir(run_dir: Path):
    """The run's figure from a finished run directory (its summary.json and each job's log)."""
    run_dir = Path(run_dir)
    summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    attempts = summary.get("attempts", [])
    steps = {}
    for attempt in attempts:
        name = attempt["job_name"]
        steps[name] = steps_from_log(run_dir / JOBS_DIR / name / LOG_FILE) or steps_from_debug_output(
            next(iter(run_dir.glob(f"{BUCKETS_DIR}/*/{DEBUG_OUTPUT_DIR}/{name}")), run_dir / "missing")
        )
    return training_curves_figure(attempts, steps, summary.get("objective"))
