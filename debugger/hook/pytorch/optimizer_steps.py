"""The optimizer step of every global step, for the messages (contracts.step_names): the saved data keeps smdebug's
global numbering, where an evaluation pass and each evaluation of an ``optimizer.step(closure)`` closure count.

Counted through PyTorch's global optimizer step hooks: an update is an optimizer step (of an optimizer holding a
watched parameter) that ends after a training step began; several optimizers stepping after one backward, or one
closure evaluated several times inside one ``step``, make one update. A script that never steps such an optimizer
is named by its training steps instead. Each step costs a dict entry and, per optimizer step, two Python calls.
"""

from __future__ import annotations

import weakref
from typing import Any

from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from contracts.epoch_length import EpochCounts
from contracts.step_names import step_name
from debugger.core.modes import ModeKeys

EVALUATION_MODES = (ModeKeys.EVAL, ModeKeys.PREDICT)
#: Global steps whose optimizer step is kept (the latest): a long job's record stays bounded (about 10 MB); a message
#: about an older step names its global step.
KEPT_STEPS = 100_000
#: The names of :meth:`OptimizerSteps.counts` in the spot-resume state (metadata.json's ``step-counts``).
UPDATES, TRAININGS, OBSERVED = "optimizer-updates", "training-steps", "optimizer-observed"


class OptimizerSteps:
    """Installed by the hook on its trial (``trial.step_numbering``); ``begin`` is told of every global step."""

    def __init__(self, hook: Any):
        self._hook = weakref.ref(hook)
        #: optimizer -> (the watched parameters it was judged against, whether it updates any of them)
        self._updates_watched: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.updates = 0  # optimizer updates so far
        self.trainings = 0  # training steps begun so far (the fallback count)
        self.observed = False  # an optimizer of the watched parameters has stepped
        self._trained_since_update = False
        # the batches behind the updates (contracts.epoch_length): training steps begun outside an optimizer's step
        # (accumulation's micro-batches; a closure's evaluations inside one step are its one batch)
        self._inside_step = False
        self._outside_since_update = 0
        self.batches = 0
        self._epoch_start = (0, 0)  # (updates, batches) when the current epoch began (or this process started)
        self._epoch_batches: tuple[int, int] | None = None  # the fewest and most batches an update took this epoch
        self.completed_epoch: EpochCounts | None = None
        #: global step -> (updates before it, training steps before it, an evaluation pass)
        self._steps: dict[int, tuple[int, int, bool]] = {}
        self.handles = [
            register_optimizer_step_pre_hook(self._before_step),
            register_optimizer_step_post_hook(self._after_step),
        ]

    def counts(self) -> dict[str, int]:
        """What a run resuming from a checkpoint written now starts from (kept with the spot-resume state,
        :mod:`debugger.storage.state_store`): the updates and training steps so far, and whether an optimizer of the
        watched parameters had stepped."""
        return {UPDATES: self.updates, TRAININGS: self.trainings, OBSERVED: int(self.observed)}

    def resume(self, next_mode_steps: dict[ModeKeys, int], counts: dict[str, int] | None = None) -> None:
        """A resumed run goes on from the counts its state kept (:meth:`counts`); a state without them (smdebug's, an
        older hook's) from its training steps, an update each (a closure's evaluations then count as updates)."""
        if counts is not None and UPDATES in counts and TRAININGS in counts:
            self.updates, self.trainings = counts[UPDATES], counts[TRAININGS]
            self.observed = bool(counts.get(OBSERVED, 0))
        else:
            self.trainings = self.updates = sum(
                count for mode, count in next_mode_steps.items() if mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL)
            )
        self._epoch_start = (self.updates, self.batches)  # the epoch counts from here: a lower bound after a restart

    def renumber(self, next_step: int) -> None:
        """The script numbers its next training step itself (``hook.step = N``: a job that goes on from a checkpoint
        another job wrote counts its steps on from there): that is the step's name."""
        self.updates = self.trainings = next_step

    def begin(self, step: int, mode: ModeKeys) -> None:
        evaluation = mode in EVALUATION_MODES
        self._steps[step] = (self.updates, self.trainings, evaluation)
        if len(self._steps) > KEPT_STEPS:
            del self._steps[next(iter(self._steps))]
        if not evaluation:
            self.trainings += 1
            self._trained_since_update = True
            if not self._inside_step:
                self._outside_since_update += 1

    def next_epoch(self) -> None:
        """The script said a new epoch began: the one before it is complete (what it trained is
        :attr:`completed_epoch`)."""
        self.completed_epoch = self.epoch_so_far()
        self._epoch_start, self._epoch_batches = (self.updates, self.batches), None

    def epoch_so_far(self) -> EpochCounts:
        """The current epoch's optimizer steps and batches so far (since this process started, after a restart)."""
        fewest, most = self._epoch_batches or (None, None)
        return EpochCounts(self.updates - self._epoch_start[0], self.batches - self._epoch_start[1], fewest, most)

    def optimizer_step(self, step: int) -> tuple[int | None, bool]:
        """(the optimizer updates before global ``step``, whether it is an evaluation pass); None: not a step seen."""
        found = self._steps.get(step)
        if found is None:
            return None, False
        updates, trainings, evaluation = found
        return (updates if self.observed else trainings), evaluation

    def name(self, step: int, with_global: bool = False) -> str:
        optimizer_step, evaluation = self.optimizer_step(step)
        return step_name(step, optimizer_step, evaluation, with_global)

    def _watched(self, optimizer: Any) -> bool:
        hook = self._hook()
        ids = getattr(hook, "_parameter_ids", None) if hook is not None else None
        if not ids:
            return True  # the zero-change hook watches whatever optimizer steps
        known = self._updates_watched.get(optimizer)
        if known is None or known[0] is not ids:
            known = ids, any(id(p) in ids for group in optimizer.param_groups for p in group["params"])
            self._updates_watched[optimizer] = known
        return known[1]

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._watched(optimizer):
            self.observed = True  # from the first step on: a closure's evaluations before its update are step 0
            self._inside_step = True

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._watched(optimizer):
            return
        self._inside_step = False
        if self._trained_since_update:
            self.observed = True
            self.updates += 1
            self._trained_since_update = False
            taken = max(1, self._outside_since_update)
            self._outside_since_update = 0
            self.batches += taken
            fewest, most = self._epoch_batches or (taken, taken)
            self._epoch_batches = (min(fewest, taken), max(most, taken))
