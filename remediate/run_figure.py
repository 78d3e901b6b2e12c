"""The run's figure (training-curves.png): what each attempt did, step by step, and what the workflow did about it.

Three panels sharing the step axis: the training loss, the total gradient norm and the learning rate, one line per
attempt, each attempt in its own colour, line style and marker (an attempt that repeats the one before it is not
hidden under it: earlier attempts are drawn on top, their markers offset). On them: a marker and the rule's name
where a rule fired (the issue step), a cross where a value stopped being finite, a dotted line where the job's
warmup ended (its first main-phase step), and in each attempt's label its objective value (or held-out accuracy).
A job that saved no learning rate shows the one it was launched with (its hyperparameter), faint, and the panel
says so. The title says what happened: how many attempts, why each ended, what changed.

The figure is built from the summary's attempts (:func:`remediate.run_report.attempts_summary`) and each job's steps
(:mod:`remediate.run_steps`: its progress lines, filled in step by step from what its debugger saved), so the same
figure comes from a live platform or from a finished run directory (:func:`figure_for_run_dir`, what the
walkthrough notebook shows).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from remediate.run_steps import job_steps, learning_rate_hyperparameter, steps_from_log

#: The panels, top to bottom: (step field, axis label, y scale). "log": logarithmic when every value is positive
#: (losses and gradient norms span decades when a run explodes); "rate": logarithmic when the values span a factor
#: of RATE_LOG_SPAN or more (attempts whose rates differ by decades), else linear from zero.
PANELS = (("loss", "loss", "log"), ("gradient_norm", "total gradient norm", "log"), ("learning_rate", "learning rate", "rate"))
RATE_LOG_SPAN = 10.0
JOBS_DIR = "jobs"
LOG_FILE = "training.log"
SUMMARY_FILE = "summary.json"
BUCKETS_DIR = "buckets"
DEBUG_OUTPUT_DIR = "debug-output"
TENSORBOARD_DIR = "tensorboard-output"
#: One style per attempt, cycling: colour, line style and marker all differ between neighbours.
LINE_STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: A line of fewer points shows every point (a job stopped after a step or two is still visible); a longer one
#: about this many markers, each attempt's at other steps.
MARKERS_PER_LINE = 15
EVERY_POINT_BELOW = 40
#: The rule names' rows down the gradient-norm panel (axes fraction apart; the ninth starts over at the top).
RULE_NAME_SPACING = 0.09
RULE_NAME_ROWS = 8


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


def attempt_style(index: int, count: int) -> dict[str, Any]:
    """The attempt's colour, line style and marker, and its drawing order (earlier attempts on top)."""
    return {
        "color": f"C{index % 10}",
        "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
        "marker": MARKERS[index % len(MARKERS)],
        "zorder": 2.0 + (count - index) / 100,
    }


def training_curves_figure(
    attempts: Sequence[Mapping[str, Any]],
    steps_by_job: Mapping[str, Sequence[Mapping[str, Any]]],
    objective: Mapping[str, Any] | None = None,
    hyperparameter_names: Mapping[str, str] | None = None,
):
    """The matplotlib Figure (the caller saves or shows it, and closes it)."""
    from matplotlib.figure import Figure  # no pyplot: no global state, safe off the main thread
    from matplotlib.lines import Line2D

    figure = Figure(figsize=(10, 10))
    axes = figure.subplots(len(PANELS), 1, sharex=True)
    handles = []
    launched_rates = []
    rule_rows = 0
    for index, attempt in enumerate(attempts):
        style = attempt_style(index, len(attempts))
        steps = steps_by_job.get(attempt["job_name"], [])
        score = attempt_score(attempt, objective)
        label = f"attempt {attempt['number']}" + (f" ({score})" if score else "") + ("" if steps else " (no steps saved)")
        handles.append(Line2D([], [], color=style["color"], linestyle=style["linestyle"], marker=style["marker"],
                              markersize=4, label=label))  # fmt: skip
        for axis, (field, _, _) in zip(axes, PANELS, strict=True):
            _plot_field(axis, steps, field, style, label, offset=index / max(len(attempts), 1))
        if steps and not any(_finite(step.get("learning_rate")) for step in steps):
            launched = learning_rate_hyperparameter(attempt.get("hyperparameters"), hyperparameter_names)
            if launched is not None:
                name, value = launched
                axes[2].plot([steps[0]["step"], steps[-1]["step"]], [value, value], color=style["color"],
                             linestyle=style["linestyle"], linewidth=2.5, alpha=0.6, zorder=style["zorder"],
                             label=f"{label}: {name}={value:g} as launched", gid="launched-learning-rate")  # fmt: skip
                launched_rates.append((name, value, steps[-1]["step"], style["color"]))
        boundary = warmup_end_step(steps)
        if boundary is not None:
            for axis in axes:
                axis.axvline(boundary, color=style["color"], linestyle=":", linewidth=1, gid="warmup-end")
            axes[-1].annotate(
                f"warmup ends ({attempt['number']})", (boundary, 0.02), xycoords=("data", "axes fraction"),
                fontsize=7, color=style["color"], rotation=90, va="bottom", ha="right",
            )  # fmt: skip
        if attempt.get("rule") and attempt.get("issue_step") is not None:
            _mark_rule(axes[1], steps, attempt, style["color"], row=rule_rows % RULE_NAME_ROWS)
            rule_rows += 1
    for axis, (_, ylabel, scale) in zip(axes, PANELS, strict=True):
        axis.set_ylabel(ylabel)
        _scale_y(axis, scale)
        axis.grid(True, alpha=0.3)
    axes[0].set_title("training loss (x: first non-finite value)", fontsize=9)
    axes[1].set_title("total gradient norm (marker: the step a rule fired)", fontsize=9)
    rate_title = "learning rate (dotted: end of warmup)"
    if launched_rates:
        names = ", ".join(dict.fromkeys(name for name, _, _, _ in launched_rates))
        for (name, value), (end, color) in _rightmost_ends(launched_rates).items():  # each value named once
            axes[2].annotate(f"{name}={value:g}", (end, value), xytext=(4, 0), textcoords="offset points", va="center",
                             fontsize=7, color=color, gid="launched-learning-rate-value")  # fmt: skip
        rate_title += f"; faint: the hyperparameter {names} as launched, where the job saved no learning rate"
    axes[2].set_title(rate_title, fontsize=9)
    axes[-1].set_xlabel("step")
    if handles:
        axes[0].legend(handles=handles, fontsize=8)
    figure.suptitle(figure_title(attempts, objective), fontsize=10, ha="left", x=0.02)
    figure.tight_layout()
    return figure


def _plot_field(axis, steps, field: str, style: Mapping[str, Any], label: str, offset: float) -> None:
    points = [(step["step"], step[field]) for step in steps if _finite(step.get(field))]
    bad = [step["step"] for step in steps if field in step and not _finite(step.get(field))]
    if not points:
        return
    if len(points) < EVERY_POINT_BELOW:
        markevery = None
    else:  # a few markers, each attempt's at other steps, so coinciding lines stay told apart
        every = max(1, len(points) // MARKERS_PER_LINE)
        markevery = (int(offset * every), every)
    axis.plot([p[0] for p in points], [p[1] for p in points], color=style["color"], linestyle=style["linestyle"],
              marker=style["marker"], markevery=markevery, markersize=4, linewidth=1.3, alpha=0.9,
              zorder=style["zorder"], label=label)  # fmt: skip
    if bad:
        axis.scatter([bad[0]], [points[-1][1]], marker="x", s=60, color=style["color"], gid="non-finite", zorder=5)


def _scale_y(axis, scale: str) -> None:
    """A y axis that shows the values: logarithmic where they span decades; a flat series linear from zero (its
    value, not a band around it: matplotlib widens a constant to +-5%, 0.095..0.105 for a learning rate of 0.1)."""
    values = [float(y) for line in axis.get_lines() if line.get_gid() != "warmup-end" for y in line.get_ydata(orig=True)]
    values = [value for value in values if math.isfinite(value)]
    values += [offset[1] for c in axis.collections if c.get_gid() != "rule-fired" for offset in c.get_offsets()]
    if not values:
        return
    low, high = min(values), max(values)
    if low > 0 and (scale == "log" or high / low >= RATE_LOG_SPAN):
        axis.set_yscale("log")
        if high / low < 1.5:  # a flat series: a factor of 2 either side, so the ticks name its value
            axis.set_ylim(low / 2, high * 2)
    elif low >= 0:
        axis.set_ylim(0, high * 1.15 if high > 0 else 1)


def _rightmost_ends(launched: Sequence[tuple[str, float, int, str]]) -> dict[tuple[str, float], tuple[int, str]]:
    """(name, value) -> the last step of the longest line at that value and its colour."""
    ends: dict[tuple[str, float], tuple[int, str]] = {}
    for name, value, end, color in launched:
        if (name, value) not in ends or end > ends[(name, value)][0]:
            ends[(name, value)] = (end, color)
    return ends


def _mark_rule(axis, steps, attempt: Mapping[str, Any], color: str, row: int) -> None:
    """A marker at the issue step, at the last finite gradient norm up to it (a job that saved none: at the top of the
    panel, not at a made-up value), and the rule's name in its own row near the panel's top (two rules that fired
    near one step do not print over each other), with a line to its marker."""
    issue_step = attempt["issue_step"]
    finite = [step["gradient_norm"] for step in steps if step["step"] <= issue_step and _finite(step.get("gradient_norm"))]
    if finite:
        where, coordinates, text = (issue_step, finite[-1]), "data", ""
    else:
        where, coordinates, text = (issue_step, 1.0), ("data", "axes fraction"), "; no gradient norm saved"
    transform = axis.transData if finite else axis.get_xaxis_transform()
    axis.scatter([where[0]], [where[1]], marker="v", s=90, color=color, edgecolor="black", zorder=6, gid="rule-fired",
                 transform=transform, clip_on=False)  # fmt: skip
    axis.annotate(
        f"{attempt['rule']} (attempt {attempt['number']}, {attempt.get('issue_step_name') or f'step {issue_step}'}{text})", where, xycoords=coordinates,
        xytext=(issue_step, 0.93 - RULE_NAME_SPACING * row), textcoords=("data", "axes fraction"), va="top",
        ha="left", fontsize=8, color=color, gid="rule-name", zorder=7,
        bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
        arrowprops={"arrowstyle": "-", "color": color, "linewidth": 0.7, "shrinkA": 0, "shrinkB": 5},
    )  # fmt: skip


def _job_dirs(run_dir: Path, job_name: str) -> tuple[Path | None, Path | None]:
    """The job's debug output and TensorBoard directories in the run directory's local buckets (None: absent)."""
    debug = next(iter(sorted(run_dir.glob(f"{BUCKETS_DIR}/*/{DEBUG_OUTPUT_DIR}/{job_name}"))), None)
    tensorboard = next(iter(sorted(run_dir.glob(f"{BUCKETS_DIR}/*/**/{job_name}/{TENSORBOARD_DIR}"))), None)
    return debug, tensorboard


def figure_for_run_dir(run_dir: Path):
    """The run's figure from a finished run directory (its summary.json, each job's log and debug output)."""
    run_dir = Path(run_dir)
    summary = json.loads((run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
    attempts = summary.get("attempts", [])
    steps = {}
    for attempt in attempts:
        name = attempt["job_name"]
        steps[name] = job_steps(steps_from_log(run_dir / JOBS_DIR / name / LOG_FILE), *_job_dirs(run_dir, name))
    names = (summary.get("execution_input") or {}).get("hyperparameter_names")
    return training_curves_figure(attempts, steps, summary.get("objective"), names)
