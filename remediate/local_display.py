"""What `remediate local run` shows: the live line, notifications as they arrive, the table of attempts."""

from __future__ import annotations

import json
import time
from typing import Any

from rich.table import Table
from rich.text import Text

from contracts.remedies import show
from remediate.execution_history import current_state_name

#: The table lists at most this many hyperparameters (the ones the planner changed come first).
MAX_TABLE_HYPERPARAMETERS = 4


def number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


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
    first_line = str(message).strip().splitlines()[0] if str(message).strip() else ""
    if first_line:
        text.append(f": {first_line[:200]}")
    return text


def table_hyperparameters(attempts: list[dict[str, Any]]) -> list[str]:
    """The hyperparameters worth a column: those that changed between attempts first, then the others."""
    names: list[str] = []
    for row in attempts:
        for name in row.get("hyperparameters", {}):
            if name not in names:
                names.append(name)
    changed = [name for name in names if len({json.dumps(row["hyperparameters"].get(name)) for row in attempts}) > 1]
    return (changed + [name for name in names if name not in changed])[:MAX_TABLE_HYPERPARAMETERS]


def attempts_table(summary: dict[str, Any]) -> Table:
    objective = summary.get("objective")
    table = Table(title=f"attempts ({summary['policy']} remedies)", header_style="bold")
    table.add_column("#", no_wrap=True)
    columns = table_hyperparameters(summary["attempts"])
    for name in columns:
        table.add_column(name, overflow="fold")
    table.add_column("steps", no_wrap=True)
    table.add_column(objective["metric_name"] if objective else "objective", no_wrap=True)
    for column in ("outcome", "rule @ step", "decision"):
        table.add_column(column, overflow="fold")  # narrow terminals wrap these; nothing is cut
    for row in summary["attempts"]:
        rule = f"{row['rule']} @ {row['issue_step']}" if row.get("rule") else "-"
        table.add_row(
            str(row["number"]),
            *(show(row["hyperparameters"][name]) if name in row["hyperparameters"] else "-" for name in columns),
            str(row["training_steps"]),
            number(row.get("objective_value")),
            row.get("outcome") or row["status"],
            rule,
            row.get("decision") or "-",
        )
    return table
