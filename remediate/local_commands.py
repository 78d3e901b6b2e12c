"""``remediate local run``: the whole remediation loop on this machine, training for real.

The same state machine file and Lambda handlers as the cloud stack run in
moto's Step Functions interpreter; SageMaker's training API is answered by a
local platform that runs the training entry point as subprocesses. Progress is
shown live; everything lands in a run directory (see ``remediate.run_report``).

Exit codes: 0 a job completed; 1 the loop ended without a completed job (budget
spent, execution failed); 2 bad input (nothing was started); 130 interrupted
(Ctrl-C: the execution and every training process were stopped).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from remediate.execution_history import latest_state_payload
from remediate.run_spec import RunSpecError, check_execution_input, read_run_spec

EXIT_OK, EXIT_NOT_COMPLETED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_RUNS_DIR = Path("runs")
POLL_SECONDS = 0.5


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived."""

    def __init__(self, signal_number: int):
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


def register(subparsers: argparse._SubParsersAction) -> None:
    local = subparsers.add_parser("local", help="run the workflow on this machine (no AWS account)")
    commands = local.add_subparsers(dest="command", metavar="{run}", required=True)
    run = commands.add_parser(
        "run",
        help="run the remediation loop locally with real training",
        description=(
            "Run the remediation loop locally: the real state machine and handlers in moto, training jobs as "
            "local processes. Defaults: the reference scenario (ResNet-20 without batch norm, warmup LR 0.1) on "
            "generated data, evidence policy, 1 s monitor interval."
        ),
    )
    run.add_argument(
        "--run-spec", type=Path, metavar="FILE", help="execution input JSON (the same keys the cloud accepts)"
    )
    run.add_argument("--policy", choices=("evidence", "anchor"), help="planner policy (overrides the run_spec's)")
    run.add_argument(
        "--run-dir", type=Path, metavar="DIR", help="where to write the run's files (default runs/<time>-<policy>)"
    )
    run.add_argument("--json", action="store_true", help="print summary.json on stdout (progress goes to stderr)")
    data = run.add_mutually_exclusive_group()
    data.add_argument(
        "--data", type=Path, metavar="DIR", help="channels to train on: DIR/train and DIR/test with x.npy, y.npy"
    )
    data.add_argument(
        "--train-samples", type=int, metavar="N", default=2560, help="generated training samples (default 2560)"
    )
    run.add_argument(
        "--test-samples", type=int, metavar="N", default=512, help="generated held-out samples (default 512)"
    )
    run.add_argument(
        "--stop-grace-seconds",
        type=float,
        default=10.0,
        metavar="S",
        help="SIGTERM-to-SIGKILL grace when stopping a job",
    )
    run.set_defaults(handler=run_command)


# --------------------------------------------------------------------------- input


class BadInput(Exception):
    """Bad command-line input; the message names the field or option and the fix."""


def load_execution_input(arguments: argparse.Namespace) -> dict[str, Any]:
    """The execution input from --run-spec and --policy, validated as the workflow validates it."""
    from local_runtime.runtime import RuntimeOptions, check_data_dir, local_execution_input

    try:
        overrides = read_run_spec(arguments.run_spec) if arguments.run_spec is not None else {}
        execution_input = local_execution_input(RuntimeOptions(run_dir=Path(".")), overrides)
        if arguments.policy:
            execution_input["policy"] = arguments.policy
        check_execution_input(execution_input, f"--run-spec {arguments.run_spec}" if arguments.run_spec else "execution input")
    except RunSpecError as error:
        raise BadInput(str(error)) from None
    if arguments.train_samples < 1:
        raise BadInput(f"--train-samples: must be >= 1 (got {arguments.train_samples})")
    if arguments.test_samples < 1:
        raise BadInput(f"--test-samples: must be >= 1 (got {arguments.test_samples})")
    if arguments.data is not None:
        try:
            check_data_dir(arguments.data)
        except FileNotFoundError as error:
            raise BadInput(str(error)) from None
    return execution_input


def default_run_dir(policy: str) -> Path:
    return DEFAULT_RUNS_DIR / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{policy}"


# --------------------------------------------------------------------------- display


def progress_view(runtime, history: list[dict[str, Any]], status: str, started: float) -> Text:
    """One status line: elapsed, execution status, current state, attempt, job status, step, loss, gradient norm."""
    from remediate.execution_history import current_state_name

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
                f" | step {step['step']} loss {_number(step.get('loss'))} grad norm {_number(step.get('gradient_norm'))}"
            )
    return line


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "-" if value is None else str(value)


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


def attempts_table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"attempts ({summary['policy']} policy)", header_style="bold")
    for column in ("#", "warmup LR", "LR", "BN", "steps", "accuracy"):
        table.add_column(column, no_wrap=True)
    for column in ("outcome", "rule @ step", "decision"):
        table.add_column(column, overflow="fold")  # narrow terminals wrap these; nothing is cut
    for row in summary["attempts"]:
        spec = row["run_spec"]
        rule = f"{row['rule']} @ {row['issue_step']}" if row.get("rule") else "-"
        table.add_row(
            str(row["number"]),
            _number(spec.get("warmup_learning_rate")),
            _number(spec.get("learning_rate")),
            "on" if spec.get("add_batch_norm") else "off",
            str(row["training_steps"]),
            _number(row.get("held_out_accuracy")),
            row.get("outcome") or row["status"],
            rule,
            row.get("decision") or "-",
        )
    return table


# --------------------------------------------------------------------------- the command


def run_command(arguments: argparse.Namespace) -> int:
    try:
        execution_input = load_execution_input(arguments)
    except BadInput as error:
        print(f"error: {error}", file=sys.stderr)  # plain: one unwrapped line a script can grep
        return EXIT_BAD_INPUT
    from remediate.run_report import SUMMARY_FILE

    run_dir = arguments.run_dir or default_run_dir(execution_input.get("policy", "evidence"))
    if (run_dir / SUMMARY_FILE).exists():
        print(
            f"error: --run-dir {run_dir}: already holds a run (summary.json); choose a new directory", file=sys.stderr
        )
        return EXIT_BAD_INPUT
    console = Console(stderr=True) if arguments.json else Console()
    return _run(arguments, execution_input, run_dir, console)


def _raise_interrupted(signal_number: int, _frame: Any) -> None:
    raise Interrupted(signal_number)


def _run(arguments: argparse.Namespace, execution_input: dict[str, Any], run_dir: Path, console: Console) -> int:
    from local_runtime.runtime import LocalRuntime, RuntimeOptions
    from remediate import run_report

    previous_handlers = {sig: signal.signal(sig, _raise_interrupted) for sig in (signal.SIGINT, signal.SIGTERM)}
    started = time.monotonic()
    interrupted: Interrupted | None = None
    runtime = None
    description = None
    history: list[dict[str, Any]] = []
    summary: dict[str, Any] | None = None
    try:
        options = RuntimeOptions(
            run_dir=run_dir,
            data_dir=arguments.data,
            train_samples=arguments.train_samples,
            test_samples=arguments.test_samples,
            region=execution_input["region"],
            bucket=execution_input["bucket"],
            stop_grace_seconds=arguments.stop_grace_seconds,
        )
        runtime = LocalRuntime(options)
        try:
            console.print(f"run directory: {run_dir}", highlight=False)
            runtime.__enter__()
            runtime.start(execution_input)
            console.print(f"execution: {runtime.execution_arn}", highlight=False)
            with Live(console=console, refresh_per_second=4, transient=False) as live:
                while True:
                    history = runtime.history()
                    for notification in runtime.drain_notifications():
                        live.console.print(notification_text(notification))
                    description = runtime.describe()
                    live.update(progress_view(runtime, history, description["status"], started))
                    if description["status"] != "RUNNING":
                        break
                    time.sleep(POLL_SECONDS)
            for notification in runtime.drain_notifications():
                console.print(notification_text(notification))
            # The execution is over: no job outlives it (and every job's status is final for the summary).
            runtime.platform.shutdown()
        except Interrupted as caught:
            interrupted = caught
            # Finish the cleanup: a second Ctrl-C must not leave processes behind.
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
            console.print(f"\n[bold yellow]{caught.args[0]}: stopping the execution and every training job...[/]")
            if runtime.execution_arn:
                try:
                    runtime.stop_execution(f"{caught.args[0]} from the local CLI")
                except Exception as error:  # noqa: BLE001 - report, keep cleaning up
                    console.print(f"could not stop the execution: {error}")
            if runtime.platform is not None:
                runtime.platform.shutdown()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)  # the run directory is written whole, whatever arrives now
        if runtime.platform is None:
            console.print("[bold yellow]interrupted before the local account was set up; nothing was started[/]")
            return EXIT_INTERRUPTED
        if runtime.execution_arn:
            description = runtime.describe()
            history = runtime.history()
            runtime.drain_notifications()
        payload = latest_state_payload(description or {}, history)
        summary = run_report.build_summary(
            run_dir=run_dir,
            execution_input=execution_input,
            description=description,
            payload=payload,
            platform=runtime.platform,
            notifications=runtime.notifications,
            wall_seconds=time.monotonic() - started,
            interrupted=interrupted is not None,
        )
        remaining = runtime.platform.running_process_ids()
        summary["training_processes_left"] = remaining
        run_report.write_json(run_dir / run_report.EXECUTION_FILE, description or {})
        run_report.write_json(run_dir / run_report.HISTORY_FILE, history)
        run_report.write_json(run_dir / run_report.FINAL_PAYLOAD_FILE, payload or {})
        run_report.write_json(run_dir / run_report.NOTIFICATIONS_FILE, runtime.notifications)
        run_report.plot_training_curves(runtime.platform, run_dir / run_report.PLOT_FILE)
        run_report.write_json(run_dir / run_report.SUMMARY_FILE, summary)
    finally:
        if runtime is not None:
            runtime.close()
        for sig, handler in previous_handlers.items():
            signal.signal(sig, handler)

    console.print()
    console.print(attempts_table(summary))
    for row in summary["attempts"]:
        console.print(f"  {row['number']}: {row['job_name']} ({row['status']})", highlight=False)
    status = summary["execution_status"]
    if interrupted is not None:
        console.print(
            f"[bold yellow]interrupted[/]: execution {status}; training processes left: {len(summary['training_processes_left'])}"
        )
    elif summary["completed_job"]:
        console.print(
            f"[bold green]completed[/]: {summary['completed_job']} after {summary['launches_until_completed']} launch(es), "
            f"held-out accuracy {_number(summary['held_out_accuracy'])}, {summary['wall_seconds']:.0f} s"
        )
    else:
        console.print(f"[bold red]no job completed[/]: execution {status}; {summary.get('end_reason') or ''}")
    console.print(f"run directory: {run_dir}", highlight=False)
    if arguments.json:
        sys.stdout.write((run_dir / run_report.SUMMARY_FILE).read_text(encoding="utf-8") + "\n")
        sys.stdout.flush()
    if interrupted is not None:
        return EXIT_INTERRUPTED if interrupted.signal_number == signal.SIGINT else 128 + interrupted.signal_number
    return EXIT_OK if summary["completed_job"] else EXIT_NOT_COMPLETED
