"""What `remediate local run` shows: the live line, notifications as they arrive, and the final report (the
attempts table, what was decided after each, how the run ended).

The table is built to be read at 80 columns: only the hyperparameters that changed between attempts, one
``name=value`` per line, and the result in words, so rich wraps between words and never inside one.
"""

from __future__ import annotations

import json
import time
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from contracts.remedies import show
from remediate.execution_history import current_state_name

#: With a single attempt nothing changed: the table lists this many of its hyperparameters.
FIRST_ATTEMPT_HYPERPARAMETERS = 3


def number(value: Any) -> str:
    """A measurement on the live line (loss, gradient norm): four significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


def figure(value: Any) -> str:
    """A result (an accuracy, an objective's target): two decimals, so 1.0 reads 1.00 and 0.9 reads 0.90;
    very small or very large values in three significant digits."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if value == 0 or 0.01 <= abs(value) < 10_000:
        return f"{value:.2f}"
    return f"{value:.3g}"


def progress_view(runtime, history: list[dict[str, Any]], status: str, started: float) -> Text:
    """One status line: elapsed, execution status, current state, attempt, job status, step, loss, gradient norm."""
    names = runtime.platform.job_names()
    line = Text()
    line.append(f"{time.monotonic() - started:4.0f}s ", style="dim")
    line.append(f"{status} ", style="bold")
    line.append(f"state {current_state_name(history) or '-'}")
    if names:
        job = runtime.platform.job(names[-1])
        progress = runtime.platform.read_progress(job)
        line.append(f" | attempt {len(names)} {job.status}/{job.secondary_status}", style="cyan")
        if progress["step"]:
            step = progress["step"]
            line.append(
                f" | step {step['step']} loss {number(step.get('loss'))} grad norm {number(step.get('gradient_norm'))}"
            )
        else:  # a script without the example's progress lines: what its debugger last wrote
            document = runtime.platform.rule_status_document(job)
            if document is not None and document.last_step >= 0:
                line.append(f" | step {document.last_step} loss {number(document.evidence.last_finite_loss)}")
    return line


def notification_text(notification: dict[str, Any]) -> Text:
    """The subject and the whole message (its summary when it is the workflow's JSON): nothing is cut."""
    text = Text()
    text.append("notification ", style="bold magenta")
    text.append(f"{notification.get('subject') or '(no subject)'}", style="bold")
    message = notification.get("message") or ""
    try:
        parsed = json.loads(message)
        if isinstance(parsed, dict):
            message = parsed.get("summary") or parsed.get("message") or parsed.get("event") or message
    except (json.JSONDecodeError, TypeError):
        pass
    message = str(message).strip()
    if message:
        text.append(f"\n  {message}")
    return text


def changed_hyperparameters(attempts: list[dict[str, Any]]) -> list[str]:
    """The hyperparameters whose value differs between attempts, in the order the attempts list them."""
    names: list[str] = []
    for row in attempts:
        for name in row.get("hyperparameters", {}):
            if name not in names:
                names.append(name)
    changed = [name for name in names if len({json.dumps(row["hyperparameters"].get(name)) for row in attempts}) > 1]
    return changed or names[:FIRST_ATTEMPT_HYPERPARAMETERS]


def _setting_label(name: str) -> str:
    """'debugger_robust_loss' -> 'debugger robust_loss'; 'rule:ClassImbalance.threshold_imbalance' -> 'ClassImbalance
    threshold_imbalance'."""
    if name.startswith("rule:"):
        return name.removeprefix("rule:").replace(".", " ", 1)
    return name.replace("debugger_", "debugger ", 1)


def attempts_table(summary: dict[str, Any]) -> Table:
    objective = summary.get("objective")
    goal = (
        f"; objective {objective['metric_name']} {'>=' if objective['type'] == 'Maximize' else '<='} "
        f"{figure(objective['target_value'])}"
        if objective
        else ""
    )
    table = Table(
        title=f"attempts ({summary['policy']} remedies{goal})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        header_style="bold",
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("ran with")
    table.add_column("steps", justify="right", no_wrap=True)
    table.add_column(objective["metric_name"].rsplit(":", 1)[-1] if objective else "metric", justify="right")
    table.add_column("result")
    names = changed_hyperparameters(summary["attempts"])
    for row in summary["attempts"]:
        hyperparameters = row["hyperparameters"]
        shown = [f"{name}={show(hyperparameters[name])}" for name in names if name in hyperparameters]
        # what the product changed beyond the hyperparameters: the debugger's loss settings, rule parameters
        for name, change in row.get("changed_by_product", {}).items():
            if name not in hyperparameters:
                shown.append(f"{_setting_label(name)}={show(change['after'])}")
        ran_with = "\n".join(shown)
        table.add_row(
            str(row["number"]),
            ran_with or "-",
            str(row["training_steps"]),
            figure(row.get("objective_value")),
            "\n".join([row.get("result") or row.get("status") or "-", *_not_judged_cell(row)]),
        )
    return table


def final_report(console: Console, summary: dict[str, Any], interrupted) -> None:
    """The table, each attempt's job and the decision after it, and one line saying how the run ended."""
    console.print()
    if summary["attempts"]:
        console.print(attempts_table(summary))
        for row in summary["attempts"]:
            console.print(f"  {row['number']}: {row['job_name']}", highlight=False)
            if row.get("decision"):
                reason = row.get("decision_reason") or ""
                console.print(Text(f"     {row['decision']}: {reason}", style="dim"))
            for line in not_judged_lines(row):
                console.print(Text(line, style="yellow"))
    console.print(ending_line(summary, interrupted))
    console.print(f"run directory: {summary['run_dir']}", highlight=False, soft_wrap=True)  # a path, whole


def _not_judged_cell(row: dict[str, Any]) -> list[str]:
    names = [item["rule"] for item in row.get("not_judged") or ()]
    return [f"not judged: {', '.join(names)}"] if names else []


def not_judged_lines(row: dict[str, Any]) -> list[str]:
    """An attempt's rules that could not judge its job, one line each: their quiet status is no verdict."""
    return [f"     {item['rule']} could not judge: {item['why']}" for item in row.get("not_judged") or ()]


def ending_line(summary: dict[str, Any], interrupted) -> Text:
    status = summary["execution_status"] or "not started"
    objective = summary.get("objective")
    line = Text()
    if interrupted is not None:
        left = len(summary["training_processes_left"])
        line.append(interrupted.describe(), style="bold yellow")
        line.append(f": execution {status}; training processes left: {left}")
    elif summary["successful_job"]:
        reached = (
            f"{objective['metric_name']} {figure(summary['objective_value'])} (target "
            f"{'>=' if objective['type'] == 'Maximize' else '<='} {figure(objective['target_value'])})"
            if objective
            else "no objective declared"
        )
        launches = summary["launches_until_success"]
        line.append("succeeded", style="bold green")
        line.append(
            f": {summary['successful_job']} after {launches} launch{'' if launches == 1 else 'es'}, {reached}, "
            f"{summary['wall_seconds']:.0f} s"
        )
    else:
        line.append("no job succeeded", style="bold red")
        line.append(f": execution {status}; {summary.get('end_reason') or 'no reason recorded'}")
    return line
