"""``remediate local run``: the whole remediation loop on this machine, training for real.

The same state machine file and Lambda handlers as the cloud stack run in
moto's Step Functions interpreter; SageMaker's training API is answered by a
local platform that runs the training job (the job launcher, then your entry
point) as processes. Progress is shown live; everything lands in a run
directory (see ``remediate.run_report``).

Exit codes: 0 a job met the objective (or completed, when none is declared); 1
the loop ended without one (budget spent, no remedy left, execution failed); 2
bad input (nothing was started); 130 / 143 interrupted by SIGINT (Ctrl-C) /
SIGTERM at any moment: the execution and every training process were stopped,
and the run directory's summary says when.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from remediate.cli_values import seconds, whole_number
from remediate.interruption import Interrupted, Interruptions
from remediate.local_display import final_report, notification_text, progress_view
from remediate.local_inputs import BadInput, PreparedRun, prepare_run
from remediate.run_directory import RunDirectoryError, claim_run_dir
from remediate.run_inputs import add_script_options

EXIT_OK, EXIT_NOT_COMPLETED, EXIT_BAD_INPUT = 0, 1, 2
#: The built-in example's generated data: 20 steps of 128 per epoch, 512 held out.
DEFAULT_TRAIN_SAMPLES, DEFAULT_TEST_SAMPLES = 2560, 512
#: The generator holds the set in memory as float64 while it makes it (24 KiB per sample): CIFAR-10's sizes are
#: the ceiling.
MAX_TRAIN_SAMPLES, MAX_TEST_SAMPLES = 50_000, 10_000
MAX_STOP_GRACE_SECONDS = 600.0
POLL_SECONDS = 0.5


def register(subparsers: argparse._SubParsersAction) -> None:
    local = subparsers.add_parser("local", help="run the workflow on this machine (no AWS account)")
    commands = local.add_subparsers(dest="command", metavar="{run}")
    local.set_defaults(help_parser=local)
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
        "--run-dir", type=Path, metavar="DIR", help="a new (or empty) directory for the run's files (default runs/<time>-<policy>)"
    )
    run.add_argument("--json", action="store_true", help="print summary.json on stdout (progress goes to stderr)")
    data = run.add_mutually_exclusive_group()
    data.add_argument(
        "--data",
        type=Path,
        metavar="DIR",
        help="channels to train on: each subdirectory of DIR is one channel, named after it (SM_CHANNEL_<NAME>); the "
        "built-in example reads train/ and test/, each with x.npy and y.npy",
    )
    data.add_argument(
        "--train-samples",
        type=whole_number(1, MAX_TRAIN_SAMPLES, "CIFAR-10's size: the generator holds the set in memory"),
        metavar="N",
        help=f"built-in example: generated training samples (default {DEFAULT_TRAIN_SAMPLES}, at most {MAX_TRAIN_SAMPLES})",
    )
    run.add_argument(
        "--test-samples",
        type=whole_number(1, MAX_TEST_SAMPLES, "CIFAR-10's size: the generator holds the set in memory"),
        metavar="N",
        help=f"built-in example: generated held-out samples (default {DEFAULT_TEST_SAMPLES}, at most {MAX_TEST_SAMPLES})",
    )
    cores = os.cpu_count() or 1
    run.add_argument(
        "--num-threads",
        type=whole_number(1, cores, f"this machine has {cores} cores; more threads than cores slow training down"),
        metavar="N",
        help=f"training threads per job (default: this machine's {cores} cores; give fewer when other work shares "
        "them, e.g. two runs at once)",
    )
    run.add_argument(
        "--stop-grace-seconds",
        type=seconds(0, MAX_STOP_GRACE_SECONDS, low_inclusive=False),
        default=10.0,
        metavar="S",
        help="SIGTERM-to-SIGKILL grace when stopping a job (default 10, more than 0, at most 600)",
    )
    run.set_defaults(handler=run_command)


# --------------------------------------------------------------------------- the command


def run_command(arguments: argparse.Namespace) -> int:
    with Interruptions() as signals:
        signals.phase = "the input checks"
        try:
            prepared = prepare_run(arguments)
        except BadInput as error:
            print(f"error: {error}", file=sys.stderr)  # plain: one unwrapped line a script can grep
            return EXIT_BAD_INPUT
        except Interrupted as caught:
            print(f"{caught.describe()}: nothing was started", file=sys.stderr)
            return caught.exit_code
        try:
            try:
                run_dir = claim_run_dir(arguments.run_dir, prepared.policy)
            except RunDirectoryError as error:
                print(f"error: {error}", file=sys.stderr)
                return EXIT_BAD_INPUT
            console = Console(stderr=True) if arguments.json else Console()
            return LocalRun(arguments, prepared, run_dir, console, signals).run()
        except Interrupted as caught:  # before the run directory was claimed: nothing to stop, nothing written
            print(f"{caught.describe()}: nothing was started", file=sys.stderr)
            return caught.exit_code
        finally:
            prepared.scratch.cleanup()


class LocalRun:
    """One run: set up the local account, run the execution to its end (or an interruption), write the run
    directory, report. Whatever happens after the run directory is claimed, the directory gets its summary."""

    def __init__(self, arguments: argparse.Namespace, prepared: PreparedRun, run_dir: Path, console: Console, signals):
        self.arguments = arguments
        self.prepared = prepared
        self.run_dir = run_dir
        self.console = console
        self.signals = signals
        self.runtime = None
        self.description: dict[str, Any] | None = None
        self.history: list[dict[str, Any]] = []
        self.started = time.monotonic()

    def run(self) -> int:
        from local_runtime.runtime import LocalRuntime, RuntimeOptions

        interrupted: Interrupted | None = None
        execution_input = self.prepared.execution_input
        try:
            try:
                self.signals.phase = "set-up"
                self.console.print(f"run directory: {self.run_dir}", highlight=False, soft_wrap=True)
                self.runtime = LocalRuntime(
                    RuntimeOptions(
                        run_dir=self.run_dir,
                        region=execution_input["region"],
                        bucket=execution_input["bucket"],
                        num_threads=self.arguments.num_threads,
                        stop_grace_seconds=self.arguments.stop_grace_seconds,
                    )
                )
                self.runtime.__enter__()
                self._upload_inputs()
                self.runtime.start(execution_input)
                self.console.print(f"execution: {self.runtime.execution_arn}", highlight=False, soft_wrap=True)
                self.signals.phase = "training"
                self._follow()
            except Interrupted as caught:
                interrupted = caught
            with self.signals.shielded():  # the cleanup and the run directory are finished whatever arrives now
                if interrupted is not None:
                    self.console.print(f"[bold yellow]{interrupted.describe()}: stopping the execution and every "
                                       "training job...[/]")
                    self._stop()
                elif self.runtime.platform is not None:
                    self.runtime.platform.shutdown()  # the execution is over: no job outlives it
                summary = self._write_run_directory(interrupted)
        finally:
            if self.runtime is not None:
                with self.signals.shielded():
                    self.runtime.close()
        with self.signals.shielded():
            return self._report(summary, interrupted)

    def _upload_inputs(self) -> None:
        for item in self.prepared.uploads:
            self.runtime.upload(item.local_path, item.key)
        if self.prepared.generate_example_data:
            from contracts import bucket_layout
            from remediate.example_tools import generate_synthetic_channels

            channels = generate_synthetic_channels(
                Path(self.prepared.scratch.name) / "example-data",
                train_samples=self.arguments.train_samples or DEFAULT_TRAIN_SAMPLES,
                test_samples=self.arguments.test_samples or DEFAULT_TEST_SAMPLES,
            )
            for name, directory in channels.items():
                for path in sorted(directory.iterdir()):
                    self.runtime.upload(path, bucket_layout.CHANNEL_PREFIXES[name] + path.name)

    def _follow(self) -> None:
        runtime = self.runtime
        with Live(console=self.console, refresh_per_second=4, transient=False) as live:
            while True:
                self.history = runtime.history()
                for notification in runtime.drain_notifications():
                    live.console.print(notification_text(notification))
                self.description = runtime.describe()
                live.update(progress_view(runtime, self.history, self.description["status"], self.started))
                if self.description["status"] != "RUNNING":
                    break
                time.sleep(POLL_SECONDS)
        for notification in runtime.drain_notifications():
            self.console.print(notification_text(notification))

    def _stop(self) -> None:
        runtime = self.runtime
        if runtime is None:
            return
        if runtime.execution_arn:
            try:
                if runtime.describe()["status"] == "RUNNING":
                    runtime.stop_execution("interrupted from the local CLI")
            except Exception as error:  # noqa: BLE001 - report, keep cleaning up
                self.console.print(f"could not stop the execution: {error}")
        if runtime.platform is not None:
            runtime.platform.shutdown()

    def _write_run_directory(self, interrupted: Interrupted | None) -> dict[str, Any]:
        from remediate import run_report
        from remediate.execution_history import latest_state_payload

        runtime = self.runtime
        if runtime is not None and runtime.execution_arn:
            self.description = runtime.describe()
            self.history = runtime.history()
            runtime.drain_notifications()
        payload = latest_state_payload(self.description or {}, self.history)
        platform = runtime.platform if runtime is not None else None
        notifications = runtime.notifications if runtime is not None else []
        summary = run_report.build_summary(
            run_dir=self.run_dir,
            execution_input=self.prepared.execution_input,
            description=self.description,
            payload=payload,
            platform=platform,
            notifications=notifications,
            wall_seconds=time.monotonic() - self.started,
            interrupted=interrupted.to_json() if interrupted is not None else None,
        )
        run_report.write_run_files(self.run_dir, summary, self.description, self.history, payload, notifications, platform)
        return summary

    def _report(self, summary: dict[str, Any], interrupted: Interrupted | None) -> int:
        from remediate import run_report

        final_report(self.console, summary, interrupted)
        if self.arguments.json:
            sys.stdout.write((self.run_dir / run_report.SUMMARY_FILE).read_text(encoding="utf-8") + "\n")
            sys.stdout.flush()
        if interrupted is not None:
            return interrupted.exit_code
        return EXIT_OK if summary["successful_job"] else EXIT_NOT_COMPLETED
