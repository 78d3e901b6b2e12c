"""The hook's training state across a spot interruption, as smdebug keeps it (smdebug/core/state_store.py, 1.0.34).

A job on managed spot instances may lose its instance; SageMaker restarts it on a new one with the checkpoint
directory restored, and the script resumes from its newest checkpoint. So that the restarted job's steps go on from
where the checkpoint left them, the hook keeps its state in the checkpoint directory itself:

* the checkpoint directory is the ``LocalPath`` of the JSON file at env ``CHECKPOINT_CONFIG_FILE_PATH`` (default
  /opt/ml/input/config/checkpointconfig.json, which SageMaker writes when the job has a CheckpointConfig); no file,
  no state kept;
* as each step begins, if the checkpoint files changed since the last look (their count, names or sizes: the script
  wrote a checkpoint after the previous step), the hook appends a state to ``<LocalPath>/metadata.json``:
  ``training-run``, ``latest-global-step-saved``, ``latest-global-step-seen`` (the last step that began: the one
  the checkpoint follows) and ``latest-mode-step`` (each mode's last step);
* a new hook starts from the last state: its first step is ``latest-global-step-seen`` + 1, each mode's likewise,
  and its ``training-run`` one more.

The file is smdebug's, so either hook resumes from the other's states. Two differences, each a key smdebug's reader
ignores (it copies only its four): each state also names the training job that wrote it (``training-job-name``), and
a hook resumes only from its own job's states; and each carries the counts the debugger keeps beside smdebug's
numbering (``step-counts``: the optimizer updates and training steps the checkpoint follows,
:mod:`debugger.hook.pytorch.optimizer_steps`), so a restarted job names its steps as the user counts them. A state
without it (smdebug's, an older hook's) resumes those counts from the training steps, as before. Both live inside the
states, not in a file beside them: smdebug takes any other file in the checkpoint directory for a checkpoint.

The workflow's resume remedy copies a failed job's checkpoints, ``metadata.json`` with them, into the next job's;
that job is a new run with its own debug output, whose steps the script numbers itself (as before).

The restarted run goes on in the interrupted run's debug output (:func:`resume_debug_output`): its rule statuses,
evidence and actions carry over, the steps the interrupted run's rules had judged are not judged again, and the step
files of steps the restarted run will redo are removed, so the trial holds each step once, from the run that went on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contracts import ContractError
from contracts.job import CHECKPOINT_CONFIG_FILE_ENV, DEFAULT_CHECKPOINT_CONFIG_FILE
from contracts.rule_status import IN_PROGRESS, NO_ISSUES_FOUND, RULE_STATUS_FILE, RuleStatusDocument
from debugger.storage import layout

LOGGER = logging.getLogger("debugger.hook")

CHECKPOINT_DIR_KEY = "LocalPath"
METADATA_FILE = "metadata.json"
#: What SageMaker names the copies it uploads; never a checkpoint of the script's.
_NOT_CHECKPOINTS = (METADATA_FILE, "metadata.json.sagemaker-uploaded")
TRAINING_RUN = "training-run"
LATEST_GLOBAL_STEP_SAVED = "latest-global-step-saved"
LATEST_GLOBAL_STEP_SEEN = "latest-global-step-seen"
LATEST_MODE_STEP = "latest-mode-step"
#: Ours: the training job that wrote the state.
TRAINING_JOB_NAME = "training-job-name"
#: Ours: the debugger's own step counts when the state was recorded (name -> a count: OptimizerSteps.counts()).
STEP_COUNTS = "step-counts"


@dataclasses.dataclass(frozen=True)
class TrainingState:
    """One state of metadata.json."""

    training_run: int
    latest_global_step_saved: int | None
    latest_global_step_seen: int
    latest_mode_step: dict[str, int]
    job_name: str | None = None
    #: The debugger's counts beside smdebug's numbering, as the run that resumes from this state starts them.
    step_counts: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        state = {
            TRAINING_RUN: self.training_run,
            LATEST_GLOBAL_STEP_SAVED: self.latest_global_step_saved,
            LATEST_GLOBAL_STEP_SEEN: self.latest_global_step_seen,
            LATEST_MODE_STEP: dict(self.latest_mode_step),
        }
        if self.job_name is not None:
            state[TRAINING_JOB_NAME] = self.job_name
        if self.step_counts is not None:
            state[STEP_COUNTS] = dict(self.step_counts)
        return state

    @property
    def next_step(self) -> int:
        """The first step of the run that resumes from this state."""
        return self.latest_global_step_seen + 1

    def next_mode_steps(self) -> dict[str, int]:
        """Mode name -> the first step of that mode in the run that resumes from this state."""
        return {mode: step + 1 for mode, step in self.latest_mode_step.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainingState:
        saved = data[LATEST_GLOBAL_STEP_SAVED]
        return cls(
            training_run=int(data[TRAINING_RUN]),
            latest_global_step_saved=None if saved is None else int(saved),
            latest_global_step_seen=int(data[LATEST_GLOBAL_STEP_SEEN]),
            latest_mode_step={str(mode): int(step) for mode, step in dict(data[LATEST_MODE_STEP]).items()},
            job_name=data.get(TRAINING_JOB_NAME),
            step_counts=_step_counts(data.get(STEP_COUNTS)),
        )


def _step_counts(value: Any) -> dict[str, int] | None:
    """The state's own counts, or None where they are missing or not counts (the counts then start as before)."""
    if not isinstance(value, dict):
        return None
    if not all(isinstance(name, str) and type(count) is int and count >= 0 for name, count in value.items()):
        return None
    return dict(value)


def checkpoint_dir_from_config(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The checkpoint directory the container's checkpoint configuration names (its LocalPath), or None."""
    path = Path(environ.get(CHECKPOINT_CONFIG_FILE_ENV) or DEFAULT_CHECKPOINT_CONFIG_FILE)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        LOGGER.warning("the checkpoint configuration %s is unreadable (%s): no spot-resume state is kept", path, error)
        return None
    local_path = config.get(CHECKPOINT_DIR_KEY) if isinstance(config, dict) else None
    return Path(local_path) if isinstance(local_path, str) and local_path else None


class StateStore:
    """The states of one checkpoint directory (none when ``checkpoint_dir`` is None: nothing is kept)."""

    def __init__(self, checkpoint_dir: Path | None, job_name: str):
        self.checkpoint_dir = checkpoint_dir
        self.job_name = job_name
        self._states: list[TrainingState] = self._read() if checkpoint_dir is not None else []
        self._last_seen = self._checkpoint_files() if checkpoint_dir is not None else ()
        self._previous_look = self._last_seen

    @classmethod
    def from_environment(cls, job_name: str, environ: Mapping[str, str] = os.environ) -> StateStore:
        return cls(checkpoint_dir_from_config(environ), job_name)

    @property
    def metadata_file(self) -> Path | None:
        return self.checkpoint_dir / METADATA_FILE if self.checkpoint_dir is not None else None

    def last_state(self) -> TrainingState | None:
        """This job's latest state (the most steps seen), or None: a first run."""
        own = [state for state in self._states if state.job_name in (None, self.job_name)]
        return max(own, key=lambda state: state.latest_global_step_seen) if own else None

    def checkpoint_updated(self) -> bool:
        """Whether the checkpoint files changed (count, names or sizes) since the last look; an empty directory never
        counts as a change."""
        if self.checkpoint_dir is None:
            return False
        files = self._checkpoint_files()
        changed = bool(files) and files != self._last_seen
        self._last_seen = files
        return changed

    def checkpoint_settled(self) -> bool:
        """Like :meth:`checkpoint_updated`, for a look between steps while the script may be writing: True only when
        the changed files were the same (names, sizes) at the previous call too, so a checkpoint still being written
        (a growing file, a temporary one not yet renamed) is never taken for a finished one."""
        if self.checkpoint_dir is None:
            return False
        files = self._checkpoint_files()
        settled = bool(files) and files != self._last_seen and files == self._previous_look
        self._previous_look = files
        if settled:
            self._last_seen = files
        return settled

    def record(self, state: TrainingState) -> None:
        """Append ``state`` to metadata.json (written whole, atomically: a reader never sees half of it)."""
        self._states.append(state)
        layout.atomic_write_text(self.metadata_file, json.dumps([item.to_json() for item in self._states]))
        self._last_seen = self._checkpoint_files()  # the file just written is not a checkpoint

    def _checkpoint_files(self) -> tuple[tuple[str, int], ...]:
        found = []
        for directory, _, names in os.walk(self.checkpoint_dir):
            for name in names:
                if name in _NOT_CHECKPOINTS or "sagemaker-uploaded" in name or name.startswith(f".{METADATA_FILE}."):
                    continue
                path = os.path.join(directory, name)
                try:
                    size = os.path.getsize(path)
                except OSError:
                    size = 0  # gone between the listing and the look
                found.append((path, size))
        return tuple(sorted(found))

    def _read(self) -> list[TrainingState]:
        try:
            data = json.loads(self.metadata_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            LOGGER.warning("%s is unreadable (%s): the job's steps start from 0", self.metadata_file, error)
            return []
        try:
            states = [TrainingState.from_json(item) for item in data]
        except (TypeError, KeyError, ValueError, AttributeError) as error:
            LOGGER.warning("%s holds no smdebug states (%s): the job's steps start from 0", self.metadata_file, error)
            return []
        return sorted(states, key=lambda state: state.latest_global_step_seen)


def previous_status(out_dir: Path, job_name: str, platform_job: bool = False) -> RuleStatusDocument | None:
    """The rule-status document an interrupted run of this job left in ``out_dir``: written by the same job, its
    training not ended. None otherwise (a first run, or a run that ended: the new run starts its own).

    ``platform_job``: the job's name is the platform's (SageMaker's TRAINING_JOB_NAME, unique per job), so an earlier
    run of it in ``out_dir`` is this job's own run even if it marked its end: the instance was reclaimed after the hook
    closed, before the process ended, and the restart redoes the steps after its checkpoint. That run is reopened:
    its rules that ended quiet (NoIssuesFound at the end of training) are InProgress again."""
    ended = (out_dir / layout.TRAINING_ENDED_FILE).exists()
    if ended and not platform_job:
        return None
    try:
        document = RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_bytes())
    except (OSError, ContractError):
        return None
    if document.job_name != job_name:
        return None
    if not (ended or document.training_ended):
        return document
    if not platform_job:
        return None
    rules = [
        dataclasses.replace(rule, RuleEvaluationStatus=IN_PROGRESS) if rule.RuleEvaluationStatus == NO_ISSUES_FOUND else rule
        for rule in document.rules
    ]
    return dataclasses.replace(document, training_ended=False, rules=rules)


def reopen_run(out_dir: Path) -> None:
    """The run in ``out_dir`` goes on: its end-of-training marker (an ended run's, reopened) goes."""
    (out_dir / layout.TRAINING_ENDED_FILE).unlink(missing_ok=True)


def remove_steps_from(out_dir: Path, first_step: int) -> list[int]:
    """Remove the step files numbered ``first_step`` and after (the interrupted run's steps the restarted run
    redoes from its checkpoint); return their steps."""
    removed = []
    for step, path in sorted(layout.list_step_files(out_dir).items()):
        if step >= first_step:
            try:
                path.unlink()
                removed.append(step)
            except FileNotFoundError:
                pass
    return removed
