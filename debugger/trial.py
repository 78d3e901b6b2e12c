"""Read a run's debug output, finished or still running (smdebug's ``create_trial`` in spirit).

    from debugger.trial import create_trial
    trial = create_trial("/opt/ml/output/tensors")
    trial.steps()                                  # saved steps, ascending
    trial.tensor_names(collection="gradients")
    trial.tensor("gradient/head.weight").value(10)             # numpy array
    trial.tensor("gradient/head.weight").reduction_value(10, "l2")
    trial.refresh()                                # pick up steps written since
    trial.training_ended(); trial.rule_status()

Rules receive a trial as ``base_trial``. In the job they get a :class:`LiveTrial`
that also holds the cheap scalars of every step (loss, total gradient norm,
learning rate), so every-step checks and saved-step checks use one interface.
"""

from __future__ import annotations

import collections as _collections
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from debugger import storage

REDUCTIONS = ("min", "max", "mean", "l2", "nonfinite_count")


class TensorNotAvailable(KeyError):
    """The tensor was not saved at that step."""


def reduce(array: np.ndarray, reduction: str, *, abs: bool = False) -> float:
    values = np.abs(array) if abs else np.asarray(array)
    values = values.astype(np.float64, copy=False)
    if reduction == "min":
        return float(values.min())
    if reduction == "max":
        return float(values.max())
    if reduction == "mean":
        return float(values.mean())
    if reduction == "l2":
        return float(np.sqrt(np.sum(np.square(values))))
    if reduction == "nonfinite_count":
        return float(values.size - np.count_nonzero(np.isfinite(values)))
    raise ValueError(f"reduction must be one of {', '.join(REDUCTIONS)}; got {reduction!r}")


class Tensor:
    """One named tensor across steps."""

    def __init__(self, trial: BaseTrial, name: str):
        self.trial = trial
        self.name = name

    def steps(self) -> list[int]:
        return self.trial._steps_of(self.name)

    def has_step(self, step: int) -> bool:
        return self.trial._has(self.name, step)

    def value(self, step: int) -> np.ndarray:
        return self.trial._value(self.name, step)

    def reduction_value(self, step: int, reduction: str, abs: bool = False) -> float:
        return reduce(self.value(step), reduction, abs=abs)

    def reduction_values(self, step: int) -> dict[str, float]:
        array = self.value(step)
        return {reduction: reduce(array, reduction) for reduction in REDUCTIONS}

    def collections(self) -> list[str]:
        return self.trial._collections_of(self.name)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r})"


class BaseTrial:
    """What a rule can read: names, steps, values."""

    def tensor(self, name: str) -> Tensor:
        if name not in self._names():
            raise KeyError(f"no tensor named {name!r}; known: {', '.join(list(self._names())[:20])}")
        return Tensor(self, name)

    def has_tensor(self, name: str) -> bool:
        return name in self._names()

    def names_at(self, step: int) -> set[str]:
        """Names of the tensors that have a value at ``step`` (cheap: rules call it every step)."""
        return {name for name in self._names() if self._has(name, step)}

    def tensor_names(self, collection: str | None = None, regex: Iterable | None = None) -> list[str]:
        names = [name for name, member_of in self._names().items() if collection is None or collection in member_of]
        patterns = list(regex or [])
        if patterns:
            names = [name for name in names if any(pattern.search(name) for pattern in patterns)]
        return names

    # implemented by subclasses
    def _names(self) -> dict[str, set[str]]:
        raise NotImplementedError

    def _steps_of(self, name: str) -> list[int]:
        raise NotImplementedError

    def _has(self, name: str, step: int) -> bool:
        raise NotImplementedError

    def _value(self, name: str, step: int) -> np.ndarray:
        raise NotImplementedError

    def _collections_of(self, name: str) -> list[str]:
        return sorted(self._names().get(name, ()))


class Trial(BaseTrial):
    """A debug-output directory written by :class:`debugger.Hook`, read while the run goes on or after it."""

    def __init__(self, path: str | Path, cache_steps: int = 4):
        self.path = Path(path)
        self._step_files: dict[int, Path] = {}
        self._index: dict[str, dict[int, Path]] = {}
        self._membership: dict[str, set[str]] = {}
        self._metrics: dict[str, dict[int, float]] = {}
        self._cache: _collections.OrderedDict[int, dict[str, np.ndarray]] = _collections.OrderedDict()
        self._cache_steps = cache_steps
        self.refresh()

    def refresh(self) -> list[int]:
        """Index step files written since the last call; return the new steps."""
        new_steps = []
        for step, path in sorted(storage.list_step_files(self.path).items()):
            if step in self._step_files:
                continue
            manifest, _ = storage.read_step(path, arrays=False)
            for name, member_of in manifest.items():
                self._index.setdefault(name, {})[step] = path
                self._membership.setdefault(name, set()).update(member_of)
            self._step_files[step] = path
            new_steps.append(step)
        self._metrics = {}
        for record in storage.read_metrics(self.path):
            self._metrics.setdefault(record["name"], {})[record["step"]] = record["value"]
            self._membership.setdefault(record["name"], set()).add("metrics")
        return new_steps

    def steps(self) -> list[int]:
        return sorted(self._step_files)

    def last_step(self) -> int | None:
        return max(self._step_files) if self._step_files else None

    def training_ended(self) -> bool:
        return (self.path / storage.TRAINING_ENDED_FILE).exists()

    def rule_status(self) -> RuleStatusDocument | None:
        path = self.path / RULE_STATUS_FILE
        if not path.exists():
            return None
        return RuleStatusDocument.from_json(path.read_text(encoding="utf-8"))

    def _names(self) -> dict[str, set[str]]:
        return self._membership

    def _steps_of(self, name: str) -> list[int]:
        if name in self._metrics:
            return sorted(self._metrics[name])
        return sorted(self._index.get(name, {}))

    def _has(self, name: str, step: int) -> bool:
        return step in self._index.get(name, {}) or step in self._metrics.get(name, {})

    def _value(self, name: str, step: int) -> np.ndarray:
        if name in self._metrics and step in self._metrics[name]:
            return np.asarray(self._metrics[name][step])
        path = self._index.get(name, {}).get(step)
        if path is None:
            raise TensorNotAvailable(
                f"tensor {name!r} was not saved at step {step}; saved at {self._steps_of(name)[:20]}"
            )
        if step not in self._cache:
            _, arrays = storage.read_step(path)
            self._cache[step] = arrays
            while len(self._cache) > self._cache_steps:
                self._cache.popitem(last=False)
        self._cache.move_to_end(step)
        return self._cache[step][name]


def create_trial(path: str | Path) -> Trial:
    """Open a run's debug-output directory (local path)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no debug output at {path}: pass the hook's out_dir (DEBUG_OUTPUT_DIR)")
    return Trial(path)


class LiveTrial(BaseTrial):
    """The in-job view rules read: every step's cheap scalars plus the recent saved steps (older ones from disk)."""

    def __init__(self, out_dir: Path, keep_saved_steps: int = 3):
        self.out_dir = out_dir
        self._membership: dict[str, set[str]] = {}
        self._scalars: dict[str, dict[int, float]] = {}
        self._scalars_at: dict[int, set[str]] = {}
        self._saved_step_set: set[int] = set()
        self._saved: _collections.OrderedDict[int, dict[str, np.ndarray]] = _collections.OrderedDict()
        self._saved_names: dict[str, set[int]] = {}
        self._keep = keep_saved_steps
        self._disk: Trial | None = None

    # --- written by the hook
    def add_scalar(self, name: str, collection: str, step: int, value: float) -> None:
        self._scalars.setdefault(name, {})[step] = value
        self._scalars_at.setdefault(step, set()).add(name)
        members = self._membership.get(name)
        if members is None:
            self._membership[name] = {collection}
        elif collection not in members:
            members.add(collection)

    def add_saved_step(self, step: int, tensors: dict[str, np.ndarray], membership: dict[str, list[str]]) -> None:
        self._saved[step] = tensors
        self._saved_step_set.add(step)
        for name, member_of in membership.items():
            self._membership.setdefault(name, set()).update(member_of)
            self._saved_names.setdefault(name, set()).add(step)
        while len(self._saved) > self._keep:
            self._saved.popitem(last=False)

    # --- read by rules
    def names_at(self, step: int) -> set[str]:
        names = set(self._scalars_at.get(step, ()))
        saved = self._saved.get(step)
        if saved is not None:
            names.update(saved)
        elif step in self._saved_step_set:  # saved, but no longer held in memory
            names.update(name for name, steps in self._saved_names.items() if step in steps)
        return names

    def steps(self) -> list[int]:
        steps = set(self._saved_step_set)
        for series in self._scalars.values():
            steps.update(series)
        return sorted(steps)

    def _names(self) -> dict[str, set[str]]:
        return self._membership

    def _steps_of(self, name: str) -> list[int]:
        steps = set(self._scalars.get(name, {}))
        steps.update(self._saved_names.get(name, ()))
        return sorted(steps)

    def _has(self, name: str, step: int) -> bool:
        series = self._scalars.get(name)
        if series is not None and step in series:
            return True
        saved = self._saved.get(step)
        if saved is not None:
            return name in saved
        return step in self._saved_names.get(name, ())

    def _value(self, name: str, step: int) -> np.ndarray:
        series = self._scalars.get(name)
        if series is not None and step in series:
            return np.asarray(series[step])
        saved = self._saved.get(step)
        if saved is not None and name in saved:
            return saved[name]
        if step in self._saved_names.get(name, ()):
            if self._disk is None:
                self._disk = Trial(self.out_dir)
            else:
                self._disk.refresh()
            return self._disk._value(name, step)
        raise TensorNotAvailable(f"tensor {name!r} is not available at step {step}")
