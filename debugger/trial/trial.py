"""Read a run's debug output, finished or still running: smdebug's documented trial API.

    from debugger.trial import create_trial
    trial = create_trial("/opt/ml/output/tensors")      # or "s3://bucket/prefix"
    trial.steps(); trial.steps(mode=modes.TRAIN)        # global steps; a mode's own steps
    trial.tensor_names(collection="gradients"); trial.tensor_names(regex="relu")
    trial.tensor("gradient/Net_fc1.weight").value(10)  # numpy array
    trial.tensor(name).reduction_value(10, "l2")
    trial.wait_for_steps([20]); trial.has_passed_step(30)   # while the run goes on
    trial.training_ended(); trial.rule_status()          # ours

A trial reloads the step files written since it last looked whenever it is queried (steps, tensor
names, an unknown tensor), until it has seen the run end. Rules receive a trial as ``base_trial``; in
the job they get a :class:`debugger.trial.live_trial.LiveTrial`.
"""

from __future__ import annotations

import collections as _collections
import json
import logging
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from debugger.core.collection import Collection
from debugger.core.exceptions import (
    IndexReaderException,
    InvalidWorker,
    NoMoreData,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from debugger.core.modes import ModeKeys, parse_mode
from debugger.storage import layout
from debugger.trial.tensor import WORKER, StepState, Tensor
from debugger.trial.trial_sources import LocalSource, S3Source, is_s3_uri

#: Kept for the callers of the first version of this module.
TensorNotAvailable = TensorUnavailableForStep
#: How often wait_for_steps looks for new steps.
POLL_SECONDS = 0.2
#: A local path with no output yet: smdebug's create_trial waits for the training job's first output, looking again
#: every 2 seconds and warning after 10 looks that the path may be wrong, so an analysis started with its job (the
#: AWS guide's real-time analysis) reads the job as it comes instead of failing before the job wrote anything.
OUTPUT_POLL_SECONDS = 2.0
LOOKS_BEFORE_WARNING = 10
_logger = logging.getLogger("debugger.trial")

__all__ = ["BaseTrial", "StepState", "Tensor", "TensorNotAvailable", "Trial", "create_trial"]


def _patterns(regex: Any) -> list[re.Pattern[str]]:
    items = [regex] if isinstance(regex, (str, re.Pattern)) else list(regex)
    return [item if isinstance(item, re.Pattern) else re.compile(item) for item in items]


class BaseTrial:
    """What a rule can read: names, steps (global and per mode), values."""

    def __init__(self) -> None:
        self._global_to_mode: dict[int, tuple[ModeKeys, int]] = {}
        self._mode_to_global: dict[ModeKeys, dict[int, int]] = {}
        self._step_names: dict[int, set[str]] = {}
        self.dynamic_refresh = True
        #: How messages name a global step (debugger.hook.pytorch.optimizer_steps, set by the PyTorch hook): None
        #: names it by its global number (a saved trial, an XGBoost job's boosting rounds).
        self.step_numbering = None

    def step_name(self, step: int, with_global: bool = False) -> str:
        """'step 7', 'the evaluation pass after step 6': how a message names global ``step`` (contracts.step_names)."""
        if self.step_numbering is None:
            return f"step {step}"
        return self.step_numbering.name(step, with_global)

    # --- the step index, filled by subclasses
    def _index_step(self, step: int, mode: ModeKeys, mode_step: int, names: Iterable[str]) -> None:
        self._global_to_mode[step] = (mode, mode_step)
        if mode is not ModeKeys.GLOBAL:
            self._mode_to_global.setdefault(mode, {})[mode_step] = step
        self._step_names.setdefault(step, set()).update(names)

    def _to_global(self, step: int, mode: ModeKeys) -> int | None:
        if mode is ModeKeys.GLOBAL:
            return step
        return self._mode_to_global.get(mode, {}).get(step)

    def maybe_refresh(self) -> None:
        """Look for new steps (a finished or in-memory trial has nothing to do)."""

    # --- smdebug's trial API
    def tensor(self, tname: str) -> Tensor:
        if not self.has_tensor(tname):
            raise TensorUnavailable(tname)
        return Tensor(self, tname)

    def has_tensor(self, tname: str) -> bool:
        if tname not in self._names():
            self.maybe_refresh()
        return tname in self._names()

    def tensor_names(self, show_prefixed_tensors: bool = False, *, step=None, mode=ModeKeys.GLOBAL, regex=None, collection=None) -> list[str]:
        """Names of the tensors saved (at ``step`` of ``mode`` if given), matching ``regex`` (a string or a list)
        or belonging to ``collection`` (a name or a Collection); not both."""
        if regex is not None and collection is not None:
            raise ValueError("Only one of `regex` or `collection` can be passed to tensor_names")
        mode = parse_mode(mode)
        self.maybe_refresh()
        membership = self._names()
        if step is not None:
            global_step = self._to_global(int(step), mode)
            names = set(self._step_names.get(global_step, ())) if global_step is not None else set()
        elif mode is ModeKeys.GLOBAL:
            names = set(membership)
        else:
            names = set().union(*(self._step_names.get(g, ()) for g in self._mode_to_global.get(mode, {}).values()))
        if collection is not None:
            wanted = collection.name if isinstance(collection, Collection) else collection
            if not isinstance(wanted, str):
                raise TypeError(f"collection must be a collection name or a Collection; got {type(collection).__name__}")
            # as smdebug: the tensors the collection's definition (names, patterns) matches, whichever collection
            # saved them (a weight saved by save_all's "all" is still one of the "weights"); besides, those it saved
            definition = self._collection_definitions().get(wanted)
            names = {
                name
                for name in names
                if wanted in membership.get(name, ()) or (definition is not None and definition.matches(name))
            }
        if regex is not None:
            patterns = _patterns(regex)
            names = {name for name in names if any(pattern.search(name) for pattern in patterns)}
        return sorted(names)

    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> list[int]:
        """Global steps seen, or the steps of ``mode`` (its own step numbers)."""
        mode = parse_mode(mode)
        self.maybe_refresh()
        if mode is ModeKeys.GLOBAL:
            return sorted(self._global_to_mode)
        return sorted(self._mode_to_global.get(mode, {}))

    def modes(self) -> list[ModeKeys]:
        self.maybe_refresh()
        return [mode for mode in ModeKeys if self._mode_to_global.get(mode)]

    def mode(self, global_step: int) -> ModeKeys | None:
        found = self._global_to_mode.get(global_step) or (self.maybe_refresh(), self._global_to_mode.get(global_step))[1]
        return found[0] if found else None

    def mode_step(self, global_step: int) -> int | None:
        found = self._global_to_mode.get(global_step) or (self.maybe_refresh(), self._global_to_mode.get(global_step))[1]
        return found[1] if found else None

    def mode_modestep(self, global_step: int) -> tuple[ModeKeys | None, int | None]:
        return self.mode(global_step), self.mode_step(global_step)

    def global_step(self, mode, mode_step: int) -> int | None:
        mode = parse_mode(mode)
        step = self._to_global(mode_step, mode)
        if step is None:
            self.maybe_refresh()
            step = self._to_global(mode_step, mode)
        return step

    #: Whose tensors this trial holds: the chief's for a job's output; in the job, the rank's own (LiveTrial).
    worker = WORKER

    def workers(self) -> list[str]:
        return [self.worker] if self._global_to_mode else []

    def worker_trial(self, worker: str) -> BaseTrial:
        """The trial of one worker's own tensors (this one for its own worker)."""
        if worker != self.worker or not self._global_to_mode:
            raise InvalidWorker(worker)
        return self

    def names_at(self, step: int) -> set[str]:
        """Names of the tensors with a value at global ``step`` (rules call it every step)."""
        return set(self._step_names.get(step, ()))

    # --- implemented by subclasses
    def _names(self) -> dict[str, set[str]]:
        raise NotImplementedError

    def _collection_definitions(self) -> dict[str, Collection]:
        """The run's collections by name (their patterns and tensor names), for tensor_names(collection=...)."""
        return {}

    def _steps_of(self, name: str) -> list[int]:
        return sorted(step for step, names in self._step_names.items() if name in names)

    def _has(self, name: str, step: int) -> bool:
        return name in self._step_names.get(step, ())

    def _value(self, name: str, step: int) -> np.ndarray | None:
        raise NotImplementedError

    def _reductions(self, name: str, step: int) -> dict[str, float]:
        return {}

    def _shape(self, name: str, step: int) -> list[int] | None:
        value = self._value(name, step) if self._has(name, step) else None
        return None if value is None else list(np.shape(value))


class Trial(BaseTrial):
    """A debug output written by the hook (local directory or S3 prefix), read while the run goes on or after."""

    def __init__(self, path: str | Path, name: str | None = None, range_steps: tuple | None = None, cache_steps: int = 4):
        super().__init__()
        self.source = S3Source(str(path)) if is_s3_uri(str(path)) else LocalSource(path)
        self.path = path if is_s3_uri(str(path)) else Path(path)
        self.name = name or str(path).rstrip("/").rsplit("/", 1)[-1]
        self.range_steps = range_steps
        self.loaded_all_steps = False
        self._locators: dict[int, str] = {}
        self._manifests: dict[int, layout.StepManifest] = {}
        self._membership: dict[str, set[str]] = {}
        self._metrics: dict[str, dict[int, float]] = {}
        self._cache: _collections.OrderedDict[int, dict[str, np.ndarray]] = _collections.OrderedDict()
        self._cache_steps = cache_steps
        self._worker_trials: dict[str, Trial] = {}
        self._definitions: dict[str, Collection] | None = None
        self.refresh()

    def _in_range(self, step: int) -> bool:
        if self.range_steps is None:
            return True
        low, high = self.range_steps
        return (low is None or step >= low) and (high is None or step < high)

    def refresh(self) -> list[int]:
        """Index the step files written since the last call; return the new global steps."""
        ended = self.training_ended()
        new_steps = []
        for step, locator in sorted(self.source.step_files().items()):
            if step in self._locators or not self._in_range(step):
                continue
            try:
                with self.source.open_step(locator) as handle:
                    manifest, _ = layout.read_step(handle, arrays=False)
            except (OSError, ValueError, KeyError) as error:
                raise IndexReaderException(f"step file {locator} of {self.source.description} is unreadable: {error}") from error
            for tensor_name, member_of in manifest.membership.items():
                self._membership.setdefault(tensor_name, set()).update(member_of)
            self._locators[step] = locator
            self._manifests[step] = manifest
            self._index_step(step, parse_mode(manifest.mode), manifest.mode_step, manifest.membership)
            new_steps.append(step)
        if new_steps or ended:
            self._definitions = None  # the hook rewrites its collections file as it learns of tensors
        self._metrics = {}
        for record in self.source.read_metrics():
            self._metrics.setdefault(record["name"], {})[record["step"]] = record["value"]
            self._membership.setdefault(record["name"], set()).add("metrics")
            self._step_names.setdefault(record["step"], set()).add(record["name"])
        if ended:
            self.loaded_all_steps = True  # the end marker is written after the last step file
        return new_steps

    def maybe_refresh(self) -> None:
        if self.dynamic_refresh and not self.loaded_all_steps:
            self.refresh()

    def last_step(self) -> int | None:
        return max(self._locators) if self._locators else None

    def training_ended(self) -> bool:
        return self.source.exists(layout.TRAINING_ENDED_FILE)

    def rule_status(self) -> RuleStatusDocument | None:
        text = self.source.read_text(RULE_STATUS_FILE)
        return None if text is None else RuleStatusDocument.from_json(text)

    # --- workers (torch.distributed: debugger.hook.distributed)
    def workers(self) -> list[str]:
        """smdebug's worker names: worker_0 (the chief, whose output this is: it saved steps or, as smdebug counts
        workers, its collections) and every other worker that recorded its own tensors (include_workers="all")."""
        own = super().workers() or ([self.worker] if self.source.exists(layout.COLLECTIONS_FILE) else [])
        return own + [name for name in self.source.worker_names() if name not in own]

    def worker_trial(self, worker: str) -> Trial:
        if worker == self.worker and self._global_to_mode:
            return self
        trial = self._worker_trials.get(worker)
        if trial is None:
            if worker not in self.workers():
                raise InvalidWorker(worker)
            trial = Trial(self.source.worker_location(worker), name=f"{self.name}/{worker}", range_steps=self.range_steps)
            trial.worker = worker
            self._worker_trials[worker] = trial
        return trial

    def collections(self) -> dict[str, Collection]:
        text = self.source.read_text(layout.COLLECTIONS_FILE)
        return {} if not text else {name: Collection.from_json_dict(data) for name, data in json.loads(text).items()}

    def _collection_definitions(self) -> dict[str, Collection]:
        if self._definitions is None:
            self._definitions = self.collections()
        return self._definitions

    def collection(self, coll_name: str) -> Collection:
        found = self.collections().get(coll_name)
        if found is None:
            raise KeyError(f"no collection named {coll_name!r} was saved; saved: {', '.join(self.collections())}")
        return found

    # --- real-time reading
    def has_passed_step(self, step: int, mode=ModeKeys.GLOBAL) -> StepState:
        """AVAILABLE once the step is saved; UNAVAILABLE when a later step is saved (or the run ended) without it;
        NOT_YET_AVAILABLE while the run may still save it."""
        mode = parse_mode(mode)
        self.maybe_refresh()
        steps = self.steps(mode)
        if step in steps:
            return StepState.AVAILABLE
        if (steps and steps[-1] > step) or self.loaded_all_steps:
            return StepState.UNAVAILABLE
        return StepState.NOT_YET_AVAILABLE

    def wait_for_steps(self, required_steps: Iterable[int], mode=ModeKeys.GLOBAL) -> None:
        """Block until every step is saved; StepUnavailable if one was skipped, NoMoreData if the run ended first."""
        mode = parse_mode(mode)
        for step in required_steps:
            while True:
                state = self.has_passed_step(step, mode)
                if state is StepState.AVAILABLE:
                    break
                if state is StepState.UNAVAILABLE:
                    steps = self.steps(mode)
                    last = steps[-1] if steps else -1
                    if step < last or not self.loaded_all_steps:
                        raise StepUnavailable(step, mode)
                    raise NoMoreData(step, mode, last)
                time.sleep(POLL_SECONDS)

    # --- values
    def _names(self) -> dict[str, set[str]]:
        return self._membership

    def _value(self, name: str, step: int) -> np.ndarray | None:
        if name in self._metrics and step in self._metrics[name]:
            return np.asarray(self._metrics[name][step])
        manifest = self._manifests.get(step)
        if manifest is None or name not in manifest.membership:
            raise TensorUnavailableForStep(name, step)
        if name not in manifest.arrays:
            return None
        if step not in self._cache:
            with self.source.open_step(self._locators[step]) as handle:
                self._cache[step] = layout.read_step(handle)[1]
            while len(self._cache) > self._cache_steps:
                self._cache.popitem(last=False)
        self._cache.move_to_end(step)
        return self._cache[step][name]

    def _reductions(self, name: str, step: int) -> dict[str, float]:
        manifest = self._manifests.get(step)
        return dict(manifest.reductions.get(name, {})) if manifest else {}

    def _shape(self, name: str, step: int) -> list[int] | None:
        manifest = self._manifests.get(step)
        if manifest is not None and name in manifest.shapes:
            return manifest.shapes[name]
        return super()._shape(name, step)

    def __repr__(self) -> str:
        return f"<Trial {self.name}: {self.source.description}, {len(self._locators)} steps>"


def create_trial(path: str | Path, name: str | None = None, range_steps: tuple | None = None, **kwargs: Any) -> Trial:
    """Open a run's debug output: a local directory or ``s3://bucket/prefix``. A local directory the job has not
    created yet is waited for, as smdebug waits (:func:`wait_for_local_output`)."""
    unknown = set(kwargs) - {"profiler", "output_dir", "parallel", "check", "index_mode", "cache"}
    if unknown:
        raise TypeError(f"create_trial got unexpected arguments: {', '.join(sorted(unknown))}")
    if kwargs.get("profiler"):
        raise NotImplementedError("profiler trials (create_trial(..., profiler=True)) are not supported by this debugger")
    path = str(path).strip()
    if not is_s3_uri(path):
        wait_for_local_output(Path(path).expanduser())
    return Trial(path, name=name, range_steps=range_steps)


def wait_for_local_output(path: Path, sleep=time.sleep) -> None:
    """Return once ``path`` exists, looking every OUTPUT_POLL_SECONDS (smdebug's wait); the log says after
    LOOKS_BEFORE_WARNING looks that it may be the wrong path."""
    looks = 0
    while not path.exists():
        looks += 1
        if looks == LOOKS_BEFORE_WARNING:
            _logger.warning(
                "waiting for the training job's debug output at %s; if this has been a while, check that the trial "
                "points at the hook's out_dir (DEBUG_OUTPUT_DIR) or the job's S3 output path", path,
            )
        sleep(OUTPUT_POLL_SECONDS)

