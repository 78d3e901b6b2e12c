"""Spot interruptions on the local platform (``contracts.spot_interruptions``): when a job's instance is reclaimed.

A job asks for them with the request's tag ``remediation:local-spot-interruptions`` (a local run_spec's
``spot_interruptions``). Each is due once, in order: ``at_step`` when the job's progress since it last (re)started
reaches the step, ``after_seconds`` when it has trained that long since then. The job's progress is the larger of the
training-step lines its log printed since then and the steps its debugger wrote since then (a saved step file, or
the rule-status document's last step): a script that prints no progress lines is still seen to advance. The platform
looks every ``job_supervisor.POLL_SECONDS``, so a job is interrupted at or just after the step it names.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from contracts import ContractError
from contracts.debug_output import STEPS_DIR, step_from_file_name
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from contracts.spot_interruptions import AFTER_SECONDS, LOCAL_SPOT_INTERRUPTIONS_TAG, SpotInterruption, from_tag_value
from local_runtime.training_job import TrainingJobRecord


def requested_interruptions(request: dict) -> list[SpotInterruption]:
    """The interruptions a CreateTrainingJob request asks for (none without the tag). Raises ContractError naming the
    tag when its value is malformed."""
    for tag in request.get("Tags", []):
        if tag.get("Key") == LOCAL_SPOT_INTERRUPTIONS_TAG:
            return from_tag_value(tag.get("Value", ""))
    return []


class DebuggerSteps:
    """The steps a job's debugger writes in its current run: step files and the rule-status document written since
    the run started, told apart from what an earlier run of the job left by each file's modification stamp as the run
    started (the file system's clock against itself, never against the platform's)."""

    def __init__(self, debug_dir: Path):
        self.debug_dir = debug_dir
        self._before: dict[str, int] = {}

    def run_started(self) -> None:
        self._before = self._stamps()

    def latest(self) -> int | None:
        """The latest step written since the run started, or None."""
        latest = None
        for name, stamp in self._stamps().items():
            if self._before.get(name) == stamp:
                continue  # an earlier run's, untouched
            if name == RULE_STATUS_FILE:
                try:
                    step = RuleStatusDocument.from_json((self.debug_dir / name).read_bytes()).last_step
                except (OSError, ContractError):
                    continue
                step = step if step >= 0 else None
            else:
                step = step_from_file_name(name)
            if step is not None and (latest is None or step > latest):
                latest = step
        return latest

    def _stamps(self) -> dict[str, int]:
        stamps = {}
        try:
            entries = list(os.scandir(self.debug_dir / STEPS_DIR))
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if step_from_file_name(entry.name) is not None:
                try:
                    stamps[entry.name] = entry.stat().st_mtime_ns
                except FileNotFoundError:
                    continue
        try:
            stamps[RULE_STATUS_FILE] = os.stat(self.debug_dir / RULE_STATUS_FILE).st_mtime_ns
        except FileNotFoundError:
            pass
        return stamps


class InterruptionSchedule:
    """A job's interruptions still to come, and the run (the instance's life) they are counted in."""

    def __init__(self, interruptions: list[SpotInterruption], debug_dir: Path):
        self.pending = list(interruptions)
        self.happened: list[SpotInterruption] = []
        self.debugger_steps = DebuggerSteps(debug_dir)
        self._run_started = time.monotonic()

    def start_run(self) -> None:
        """The job's processes (re)start now."""
        self._run_started = time.monotonic()
        if self.pending:
            self.debugger_steps.run_started()

    def due(self, progress: Callable[[], int | None]) -> SpotInterruption | None:
        """The next interruption if it is due now (it is then counted as happened), else None. ``progress`` gives the
        latest step the job reached in this run (None: none yet); it is asked only for an ``at_step``."""
        if not self.pending:
            return None
        interruption = self.pending[0]
        if interruption.kind == AFTER_SECONDS:
            due = time.monotonic() - self._run_started >= interruption.value
        else:
            step = progress()
            due = step is not None and step >= interruption.value
        if not due:
            return None
        self.happened.append(self.pending.pop(0))
        return interruption

    def reclaim_due(self, job: TrainingJobRecord, read_log: Callable[[], object]) -> bool:
        """Whether ``job``'s next interruption is due; if so it is recorded in ``job.interruptions`` (what was asked,
        the step the job had reached). ``read_log`` brings the job's log up to date."""

        def progress() -> int | None:
            read_log()
            with job.lock:
                printed = job.log.run_latest_step
            written = self.debugger_steps.latest()
            return max((step for step in (printed, written) if step is not None), default=None)

        interruption = self.due(progress)
        if interruption is None:
            return False
        reached = progress()
        with job.lock:
            job.interruptions.append({"requested": interruption.describe(), "at_step": reached, "restored_files": None})
        return True


def note_restart(job: TrainingJobRecord) -> None:
    """A line in each host's log: the latest interruption, and what the restarted job starts from."""
    interruption = job.interruptions[-1]
    restored = interruption["restored_files"]
    restart = (
        f"with {restored} checkpoint file{'s' if restored != 1 else ''} restored from {job.checkpoint_uri}"
        if job.checkpoint_uri
        else "from the start (the job has no CheckpointConfig)"
    )
    for host in job.hosts:
        with open(host.log_path, "a", encoding="utf-8") as log:
            log.write(
                f"[local training platform] spot interruption {len(job.interruptions)} "
                f"({interruption['requested']}): the instance was reclaimed; restarting {restart}\n"
            )
