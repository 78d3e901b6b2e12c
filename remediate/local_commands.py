"""``remediate local run``: the whole remediation loop on this machine, training for real.

The same state machine file and Lambda handlers as the cloud stack run in
moto's Step Functions interpreter; SageMaker's training API is answered by a
local platform that runs the training job (the job launcher, then your entry
point) as processes. Progress is shown live; everything lands in a run
directory (see ``remediate.run_report``).

Exit codes: 0 a job met the objective (or completed, when none is declared); 1
the loop ended without one (budget spent, no remedy left, execution failed); 2
bad input (nothing was started); 130 interrupted (Ctrl-C: the execution and
every training process were stopped).
"""

from __future__ import annotations

import argparse
import datetime as dt
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from remediate.execution_history import latest_state_payload
from remediate.local_display import attempts_table, notification_text, number, progress_view
from remediate.run_inputs import add_script_options, apply_script_options, uses_builtin_example
from remediate.run_spec import RunSpecError, check_execution_input, read_run_spec
from remediate.staging import StagedUpload, StagingError, plan_staging

EXIT_OK, EXIT_NOT_COMPLETED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_RUNS_DIR = Path("runs")
#: The built-in example's generated data: 20 steps of 128 per epoch, 512 held out.
DEFAULT_TRAIN_SAMPLES, DEFAULT_TEST_SAMPLES = 2560, 512
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
            "local processes. With no script named, the built-in example (ResNet-20 without batch norm, warmup "
            "LR 0.1, the AWS blog post's reference scenario) on generated data, evidence remedies; a job's state "
            "change wakes the loop (10 s fallback poll)."
        ),
    )
    run.add_argument(
        "--run-spec", type=Path, metavar="FILE", help="execution input JSON (the same keys the cloud accepts)"
    )
    run.add_argument(
        "--policy", choices=("evidence", "anchor", "declared"), help="remedy set (overrides the run_spec's)"
    )
    add_script_options(run)
    run.add_argument(
        "--run-dir", type=Path, metavar="DIR", help="where to write the run's files (default runs/<time>-<policy>)"
    )
    run.add_argument("--json", action="store_true", help="print summary.json on stdout (progress goes to stderr)")
    data = run.add_mutually_exclusive_group()
    data.add_argument("--data", type=Path, metavar="DIR", help="channels to train on: each subdirectory of DIR is one")
    data.add_argument(
        "--train-samples", type=int, metavar="N", help="built-in example: generated training samples (default 2560)"
    )
    run.add_argument(
        "--test-samples", type=int, metavar="N", help="built-in example: generated held-out samples (default 512)"
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


@dataclass
class PreparedRun:
    """A checked execution input whose local files are packed and ready to upload."""

    execution_input: dict[str, Any]
    uploads: list[StagedUpload]
    generate_example_data: bool
    scratch: tempfile.TemporaryDirectory


def prepare_run(arguments: argparse.Namespace) -> PreparedRun:
    """The execution input from --run-spec and the options, staged and validated as the workflow validates
    it; BadInput before anything starts."""
    from local_runtime.runtime import RuntimeOptions, local_execution_input

    scratch = tempfile.TemporaryDirectory(prefix="remediate-local-")
    try:
        if arguments.run_spec is not None:
            run_spec = read_run_spec(arguments.run_spec)
            base_dir = Path(arguments.run_spec).resolve().parent
        else:
            run_spec, base_dir = {}, Path.cwd()
        run_spec = apply_script_options(run_spec, arguments)
        if arguments.policy:
            run_spec["policy"] = arguments.policy
        example = uses_builtin_example(run_spec)
        samples = {"--train-samples": arguments.train_samples, "--test-samples": arguments.test_samples}
        for option, value in samples.items():
            if value is not None and not example:
                raise BadInput(f"{option}: generates data for the built-in example only; give your script's data "
                               "with --data or --channel")
            if value is not None and value < 1:
                raise BadInput(f"{option}: must be >= 1 (got {value})")
        if arguments.data is not None:
            run_spec["channels"] = {**(run_spec.get("channels") or {}), **data_channels(arguments.data, example)}
        execution_input = local_execution_input(RuntimeOptions(run_dir=Path(".")), run_spec)
        staged, uploads = plan_staging(execution_input, Path(scratch.name), base_dir)
        where = f"--run-spec {arguments.run_spec}" if arguments.run_spec else "execution input"
        check_execution_input(staged, where)
    except (RunSpecError, StagingError) as error:
        scratch.cleanup()
        raise BadInput(str(error)) from None
    except BaseException:
        scratch.cleanup()
        raise
    generate = example and not staged.get("channels")
    return PreparedRun(staged, uploads, generate, scratch)


def data_channels(data_dir: Path, example: bool) -> dict[str, str]:
    """--data DIR: each subdirectory is a channel (the built-in example needs train/ and test/)."""
    if not data_dir.is_dir():
        raise BadInput(f"--data {data_dir}: {'is a file' if data_dir.exists() else 'no such directory'}; give a "
                       "directory whose subdirectories are the channels (train/, test/)")
    channels = {path.name: str(path.resolve()) for path in sorted(data_dir.iterdir()) if path.is_dir()}
    if example:
        missing = [name for name in ("train", "test") if name not in channels]
        if missing:
            raise BadInput(
                f"--data {data_dir}: {', '.join(missing)}/ is missing; the built-in example reads train/ and test/, "
                "each with x.npy and y.npy (make them with: python -m model.data synthetic --out DIR, in examples/resnet)"
            )
    if not channels:
        raise BadInput(f"--data {data_dir}: has no subdirectories; each subdirectory is a channel")
    return channels


def default_run_dir(policy: str) -> Path:
    return DEFAULT_RUNS_DIR / f"{dt.datetime.now():%Y%m%d-%H%M%S}-{policy}"


# --------------------------------------------------------------------------- the command


def run_command(arguments: argparse.Namespace) -> int:
    try:
        prepared = prepare_run(arguments)
    except BadInput as error:
        print(f"error: {error}", file=sys.stderr)  # plain: one unwrapped line a script can grep
        return EXIT_BAD_INPUT
    from remediate.run_report import SUMMARY_FILE

    try:
        policy = prepared.execution_input.get("policy") or ("evidence" if prepared.generate_example_data else "run")
        run_dir = arguments.run_dir or default_run_dir(policy)
        if (run_dir / SUMMARY_FILE).exists():
            print(
                f"error: --run-dir {run_dir}: already holds a run (summary.json); choose a new directory",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        console = Console(stderr=True) if arguments.json else Console()
        return _run(arguments, prepared, run_dir, console)
    finally:
        prepared.scratch.cleanup()


def _raise_interrupted(signal_number: int, _frame: Any) -> None:
    raise Interrupted(signal_number)


def _upload_inputs(runtime, prepared: PreparedRun, arguments: argparse.Namespace) -> None:
    for item in prepared.uploads:
        runtime.upload(item.local_path, item.key)
    if prepared.generate_example_data:
        from contracts import bucket_layout
        from remediate.example_data import generate_synthetic_channels

        channels = generate_synthetic_channels(
            Path(prepared.scratch.name) / "example-data",
            train_samples=arguments.train_samples or DEFAULT_TRAIN_SAMPLES,
            test_samples=arguments.test_samples or DEFAULT_TEST_SAMPLES,
        )
        for name, directory in channels.items():
            for path in sorted(directory.iterdir()):
                runtime.upload(path, bucket_layout.CHANNEL_PREFIXES[name] + path.name)


def _run(arguments: argparse.Namespace, prepared: PreparedRun, run_dir: Path, console: Console) -> int:
    from local_runtime.runtime import LocalRuntime, RuntimeOptions
    from remediate import run_report

    execution_input = prepared.execution_input
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
            region=execution_input["region"],
            bucket=execution_input["bucket"],
            stop_grace_seconds=arguments.stop_grace_seconds,
        )
        runtime = LocalRuntime(options)
        try:
            console.print(f"run directory: {run_dir}", highlight=False)
            runtime.__enter__()
            _upload_inputs(runtime, prepared, arguments)
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

    return _report(console, summary, run_dir, interrupted, arguments)


def _report(console: Console, summary: dict[str, Any], run_dir: Path, interrupted, arguments) -> int:
    from remediate import run_report

    console.print()
    console.print(attempts_table(summary))
    for row in summary["attempts"]:
        console.print(f"  {row['number']}: {row['job_name']} ({row['status']})", highlight=False)
    status = summary["execution_status"]
    objective = summary.get("objective")
    if interrupted is not None:
        console.print(
            f"[bold yellow]interrupted[/]: execution {status}; training processes left: {len(summary['training_processes_left'])}"
        )
    elif summary["successful_job"]:
        reached = (
            f"{objective['metric_name']} {number(summary['objective_value'])} (target "
            f"{'>=' if objective['type'] == 'Maximize' else '<='} {number(objective['target_value'])})"
            if objective
            else "no objective declared"
        )
        console.print(
            f"[bold green]succeeded[/]: {summary['successful_job']} after {summary['launches_until_success']} "
            f"launch(es), {reached}, {summary['wall_seconds']:.0f} s"
        )
    else:
        console.print(f"[bold red]no job succeeded[/]: execution {status}; {summary.get('end_reason') or ''}")
    console.print(f"run directory: {run_dir}", highlight=False)
    if arguments.json:
        sys.stdout.write((run_dir / run_report.SUMMARY_FILE).read_text(encoding="utf-8") + "\n")
        sys.stdout.flush()
    if interrupted is not None:
        return EXIT_INTERRUPTED if interrupted.signal_number == signal.SIGINT else 128 + interrupted.signal_number
    return EXIT_OK if summary["successful_job"] else EXIT_NOT_COMPLETED
