"""Spot interruptions on the local training platform: a run_spec's ``spot_interruptions``. Standard library only.

Managed spot training loses its instance when EC2 reclaims the capacity; SageMaker then restarts the job on a new
instance with the checkpoint directory restored from the job's checkpoint S3 location (SecondaryStatus Interrupted,
Restarting, then Training again). No real instance can be reclaimed on one machine, so a local run may ask its
platform to do it::

    "instance_type": "local",
    "spot_interruptions": [{"at_step": 30}, {"at_step": 70}, {"after_seconds": 600}]

Each job of the run is interrupted at each entry, in order, once: ``at_step`` when the job's progress (its log's
training-step lines, or the steps its debugger wrote) has reached that step since it last (re)started,
``after_seconds`` after that many seconds of training since it last (re)started. A job that ends first is not
interrupted. It is a simulation of the local platform only: with another instance type the run_spec is refused (in the
cloud, ``use_spot_instances`` asks SageMaker for real spot capacity, and EC2 decides the interruptions).

The train Lambda passes the entries to the platform as one tag of the CreateTrainingJob request
(:data:`LOCAL_SPOT_INTERRUPTIONS_TAG`, rendered by :func:`to_tag_value`, read by :func:`from_tag_value`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from contracts import ContractError

FIELD = "spot_interruptions"
#: The CreateTrainingJob tag the local platform reads the interruptions from.
LOCAL_SPOT_INTERRUPTIONS_TAG = "remediation:local-spot-interruptions"
AT_STEP, AFTER_SECONDS = "at_step", "after_seconds"
KINDS = (AT_STEP, AFTER_SECONDS)
#: At most this many interruptions per job (each restart costs a process start and a checkpoint restore).
MAX_INTERRUPTIONS = 10
#: at_step: a training step number (the steps a job counts, from 0).
AT_STEP_HIGH = 10_000_000
#: after_seconds: at most a day of training.
AFTER_SECONDS_HIGH = 86_400
#: A SageMaker tag value: 0-256 characters of letters, spaces, digits and _ . : / = + - @.
_TAG_VALUE = re.compile(r"^[\w\s.:/=+\-@]{0,256}$")
_TAG_ENTRY = re.compile(rf"^({AT_STEP}|{AFTER_SECONDS})=([0-9]+(?:\.[0-9]+)?)$")


@dataclasses.dataclass(frozen=True)
class SpotInterruption:
    """One reclaim of a job's instance: at step ``value`` (kind at_step) or after ``value`` seconds of training
    (kind after_seconds), counted since the job last (re)started."""

    kind: str
    value: float

    def to_json(self) -> dict[str, int | float]:
        return {self.kind: int(self.value) if self.kind == AT_STEP else self.value}

    def describe(self) -> str:
        return f"at step {int(self.value)}" if self.kind == AT_STEP else f"after {self.value:g} s of training"


def parse_spot_interruptions(value: Any) -> list[SpotInterruption]:
    """The run_spec's ``spot_interruptions``: a JSON list of ``{"at_step": N}`` or ``{"after_seconds": S}``.
    Raises ContractError naming the entry and what is allowed."""
    if not isinstance(value, list):
        raise ContractError(FIELD, 'must be a JSON list such as [{"at_step": 30}, {"after_seconds": 600}]')
    if len(value) > MAX_INTERRUPTIONS:
        raise ContractError(FIELD, f"has {len(value)} entries; at most {MAX_INTERRUPTIONS} interruptions per job")
    parsed: list[SpotInterruption] = []
    last_step = None
    for index, entry in enumerate(value):
        where = f"{FIELD}[{index}]"
        if not isinstance(entry, dict) or len(entry) != 1 or next(iter(entry)) not in KINDS:
            raise ContractError(where, f'must be {{"{AT_STEP}": N}} or {{"{AFTER_SECONDS}": S}} (got {entry!r})')
        kind, number = next(iter(entry.items()))
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise ContractError(f"{where}.{kind}", f"must be a number (got {number!r})")
        if kind == AT_STEP:
            if not isinstance(number, int) or not 1 <= number <= AT_STEP_HIGH:
                raise ContractError(f"{where}.{kind}", f"must be a whole step number 1-{AT_STEP_HIGH} (got {number!r})")
            if last_step is not None and number <= last_step:
                raise ContractError(
                    f"{where}.{kind}",
                    f"must be after the previous at_step {last_step} (got {number}): a restarted job goes on from its "
                    "checkpoint, so its steps only grow",
                )
            last_step = number
        elif not math.isfinite(number) or not 0 < number <= AFTER_SECONDS_HIGH:
            raise ContractError(
                f"{where}.{kind}", f"must be more than 0 and at most {AFTER_SECONDS_HIGH} seconds (got {number!r})"
            )
        parsed.append(SpotInterruption(kind, float(number)))
    return parsed


def check_spot_interruptions(value: Any) -> list[dict[str, int | float]]:
    """The run_spec's ``spot_interruptions`` checked (ContractError otherwise), as JSON."""
    return [interruption.to_json() for interruption in parse_spot_interruptions(value)]


def to_tag_value(interruptions: list[dict[str, int | float]]) -> str:
    """``at_step=30 after_seconds=600``: the entries as a SageMaker tag value."""
    parts = []
    for interruption in parse_spot_interruptions(interruptions):
        value = interruption.value
        parts.append(f"{interruption.kind}={int(value) if value == int(value) else value}")
    text = " ".join(parts)
    if not _TAG_VALUE.match(text):  # pragma: no cover - by construction
        raise ContractError(FIELD, f"cannot be a tag value: {text!r}")
    return text


def from_tag_value(text: str) -> list[SpotInterruption]:
    """The interruptions a tag value holds (:func:`to_tag_value`). Raises ContractError naming the tag."""
    entries: list[dict[str, float]] = []
    for part in text.split():
        match = _TAG_ENTRY.match(part)
        if match is None:
            raise ContractError(
                f"Tags.{LOCAL_SPOT_INTERRUPTIONS_TAG}",
                f"must be entries such as 'at_step=30 after_seconds=600' (got {text!r})",
            )
        kind, number = match.group(1), float(match.group(2))
        entries.append({kind: int(number) if kind == AT_STEP and number == int(number) else number})
    try:
        return parse_spot_interruptions(entries)
    except ContractError as error:
        raise ContractError(f"Tags.{LOCAL_SPOT_INTERRUPTIONS_TAG}", f"{error.field}: {error.problem}") from None
