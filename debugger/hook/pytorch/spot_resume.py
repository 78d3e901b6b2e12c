"""The PyTorch hook's spot resume (a mixin of :class:`debugger.hook.pytorch.hook.Hook`): smdebug's state beside the
checkpoints (:mod:`debugger.storage.state_store`) read when the hook starts and recorded when a checkpoint appears."""

from __future__ import annotations

import logging
import threading

from debugger.core.modes import ModeKeys
from debugger.hook.checkpoint_watch import CheckpointWatch
from debugger.hook.container_config import is_platform_job
from debugger.storage.state_store import StateStore, TrainingState, previous_status, remove_steps_from, reopen_run

LOGGER = logging.getLogger("debugger.hook")


class SpotResume:
    """Uses the hook's out_dir, job_name, dry_run, worker_role, trial (its step_numbering), _next_step,
    _next_mode_step, _restore_status, _flush_writer and _closed."""

    def _resume_interrupted_run(self) -> None:
        """smdebug's spot-resume state (:mod:`debugger.storage.state_store`): the steps of a restarted job go on from the last
        state this job kept beside its checkpoints, in the debug output of the run that was interrupted."""
        store = StateStore.from_environment(self.job_name)
        self._state_store = store if self.worker_role.is_chief else None  # one writer per checkpoint directory
        #: Held while a state is recorded and while a step begins (the checkpoint watch records between steps;
        #: re-entrant: a step begins by recording the state)
        self._state_lock = threading.RLock()
        self._checkpoint_watch = None
        self._training_run = 0
        self._last_saved_step: int | None = None
        self._judged_through = -1  # steps the interrupted run's rules judged: not judged again
        self._resuming = False
        #: The interrupted run's status this run went on from (a zero-change hook that stands aside puts it back).
        self._resumed_status = None
        self._first_step = self._next_step  # this run's first step (a resumed run's goes on from its state)
        #: The debugger's own counts the state kept (OptimizerSteps.counts), which the step numbering resumes from.
        self._resumed_step_counts: dict[str, int] | None = None
        last = store.last_state()
        previous = previous_status(self.out_dir, self.job_name, platform_job=is_platform_job(self.job_name))
        if previous is not None and not self.dry_run:
            reopen_run(self.out_dir)
        if last is None:
            # this job restarted with no state kept (no CheckpointConfig, or no checkpoint yet): it redoes every step,
            # so the interrupted run's step files go as its first step begins and its rules judge afresh
            self._resuming = previous is not None and not self.dry_run
            return
        self._training_run = last.training_run + 1
        self._last_saved_step = last.latest_global_step_saved
        self._next_step = self._first_step = last.next_step
        self._resumed_step_counts = last.step_counts
        for mode, step in last.next_mode_steps().items():
            if mode in ModeKeys.__members__:
                self._next_mode_step[ModeKeys[mode]] = step
        if previous is not None:
            self._restore_status(previous)
            self._judged_through = previous.last_step
            self._resumed_status = previous
        self._resuming = not self.dry_run
        LOGGER.info(
            "training run %d of job %s resumes at step %d (the state kept with its checkpoints in %s)",
            self._training_run, self.job_name, self._next_step, store.checkpoint_dir,
        )

    def _record_state_if_checkpointed(self) -> None:
        """As a step begins: a checkpoint written since the last step is recorded with the step it follows; the first
        step of a resumed run removes the interrupted run's step files from its own on (it redoes them from the
        checkpoint, a script that numbers its steps itself included), so the trial holds each step once."""
        if self._resuming:
            self._resuming = False
            remove_steps_from(self.out_dir, self._next_step)
        self._record_checkpoint_state(between_steps=False)

    def _record_checkpoint_state(self, between_steps: bool = True) -> None:
        """A checkpoint written since the last look is recorded with the last step begun (the one it follows). Between
        steps (the watch) only once the files have settled: the script may still be writing them."""
        with self._state_lock:
            store = self._state_store
            if self._closed or store is None:
                return
            if not (store.checkpoint_settled() if between_steps else store.checkpoint_updated()):
                return
            seen = self._next_step - 1
            self._flush_writer()  # the steps the state covers are on disk before it says so: a restart never lacks them
            modes = {mode.name: step - 1 for mode, step in self._next_mode_step.items()}
            modes[ModeKeys.GLOBAL.name] = seen
            # the optimizer updates the checkpoint follows: smdebug's state numbers only the global steps
            numbering = getattr(self.trial, "step_numbering", None)
            counts = numbering.counts() if numbering is not None else None
            self._state_store.record(
                TrainingState(self._training_run, self._last_saved_step, seen, modes, self.job_name, counts)
            )

    def _watch_checkpoints(self) -> None:
        """Record a checkpoint's state between steps too (:mod:`debugger.hook.checkpoint_watch`)."""
        if self._state_store is not None and self._state_store.checkpoint_dir is not None:
            self._checkpoint_watch = CheckpointWatch(self._record_checkpoint_state)
