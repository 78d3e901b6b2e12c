"""How long an epoch is in optimizer steps, read from the number a script gave and what its job did. Standard library
only.

A script tells the debugger its steps per epoch (``Hook.set_context(steps_per_epoch=...)``), documented as optimizer
steps, the unit the planner places an issue in its epoch by. A script that accumulates gradients over k batches an
optimizer step often gives ``len(loader)``, its batches: an epoch k times too long, and an issue late in the first
epoch reads as early. The number alone cannot say its unit; the job's own counts can (:func:`read_epoch_length`):

* a **completed epoch** (the script said the next epoch began): the batches it trained on (backward passes outside an
  optimizer's ``step``; a closure's evaluations inside one are the same batch) and its optimizer steps. A stated
  number within one optimizer step's batches of the batches, while the optimizer steps were fewer by the accumulation
  ratio, was given in batches: the epoch is its optimizer steps. One within that of the optimizer steps was given in
  them.
* **before an epoch completes**: the accumulation the job has kept so far. When every optimizer step so far took the
  same k >= 2 batches, over at least :data:`MIN_STEADY_STEPS` of them, and the stated number is a multiple of k that
  the first epoch has not outrun (its optimizer steps so far are fewer than the number over k), the number is read as
  batches: the epoch is the number over k.

Otherwise the number is taken as stated. Why, and what the rule cannot tell:
docs/decisions/206-steps-per-epoch-read-in-the-unit-the-job-shows.md.
"""

from __future__ import annotations

import dataclasses

OPTIMIZER_STEPS = "optimizer steps"
BATCHES = "batches"
#: Optimizer steps of one accumulation ratio before an unfinished epoch's ratio is trusted.
MIN_STEADY_STEPS = 2


@dataclasses.dataclass(frozen=True)
class EpochCounts:
    """What a job did over an epoch (or the part of one it has run): its optimizer steps and the batches they took,
    and the fewest and most batches any one of those optimizer steps took (None: none yet)."""

    optimizer_steps: int
    batches: int
    fewest_batches: int | None = None
    most_batches: int | None = None

    @property
    def steady_ratio(self) -> int | None:
        """The batches every optimizer step took when they all took the same number, over at least
        :data:`MIN_STEADY_STEPS` optimizer steps; else None."""
        if self.optimizer_steps < MIN_STEADY_STEPS or self.fewest_batches is None or self.fewest_batches != self.most_batches:
            return None
        return self.fewest_batches


@dataclasses.dataclass(frozen=True)
class EpochLength:
    """The epoch in optimizer steps, the unit the stated number was read in, and why (a phrase for the planner's text:
    'a completed epoch trained 100 batches in 25 optimizer steps')."""

    steps: int
    unit: str
    why: str | None = None
    #: The batches an optimizer step took, when the reading rests on it.
    accumulation: int | None = None


def read_epoch_length(stated: int, completed: EpochCounts | None, current: EpochCounts) -> EpochLength:
    """The epoch ``stated`` describes, in optimizer steps. ``completed``: the last epoch the job finished (None: none
    yet); ``current``: the epoch it is in, so far."""
    if completed is not None and completed.optimizer_steps > 0 and completed.batches > completed.optimizer_steps:
        ratio = completed.batches / completed.optimizer_steps
        counted = f"a completed epoch trained {completed.batches} batches in {completed.optimizer_steps} optimizer steps"
        if abs(stated - completed.batches) < ratio and abs(stated - completed.optimizer_steps) >= ratio:
            return EpochLength(max(1, round(stated / ratio)), BATCHES, counted, round(ratio))
        if abs(stated - completed.optimizer_steps) < ratio:
            return EpochLength(stated, OPTIMIZER_STEPS, counted)
        return EpochLength(stated, OPTIMIZER_STEPS)
    if completed is None:
        ratio = current.steady_ratio
        if ratio is not None and ratio >= 2 and stated % ratio == 0 and current.optimizer_steps < stated // ratio:
            why = f"every one of the job's {current.optimizer_steps} optimizer steps so far took {ratio} batches"
            return EpochLength(stated // ratio, BATCHES, why, ratio)
    return EpochLength(stated, OPTIMIZER_STEPS)
