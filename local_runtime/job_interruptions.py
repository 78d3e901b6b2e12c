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


def requested_interruptions(request: dict) -> list[SpotInterruption]:
    """The interruptions a CreateTrainingJob request asks for (none without the tag). Raises ContractError naming the
    tag when its value is malformed."""
    for tag in request.get("Tags", []):
        if tag.get("Key") == LOCAL_SPOT_INTERRUPTIONS_TAG:
            return from_tag_value(tag.get("Value", ""))
    return []


def debugger_step_since(debug_dir: Path, since_ns: int) -> int | None:
    """The latest step the job's debugger wrote at or after ``since_ns`` (time.time_ns()): a step file, or the
    rule-status document's last step. None when it wrote nothing since."""
    latest = None
    try:
        entries = list(os.scandir(debug_dir / STEPS_DIR))
    except FileNotFoundError:
        entries = []
    for entry in entries:
        step = step_from_file_name(entry.name)
        if step is None or (latest is not None and step <= latest):
            continue
        try:
            if entry.stat().st_mtime_ns >= since_ns:
                latest = step
        except FileNotFoundError:
            continue
    status = debug_dir / RULE_STATUS_FILE
    try:
        if os.stat(status).st_mtime_ns >= since_ns:
            last = RuleStatusDocument.from_json(status.read_bytes()).last_step
            if last >= 0 and (latest is None or last > latest):
                latest = last
    except (OSError, ContractError):
        pass
    return latest


class InterruptionSchedule:
    """A job's interruptions still to come, and the run (the instance's life) they are counted in."""

    def __init__(self, interruptions: list[SpotInterruption]):
        self.pending = list(interruptions)
        self.happened: list[SpotInterruption] = []
        self._run_started = time.monotonic()
        self.run_started_ns = time.time_ns()

    def start_run(self) -> None:
        """The job's processes (re)started now."""
        self._run_started = time.monotonic()
        self.run_started_ns = time.time_ns()

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
