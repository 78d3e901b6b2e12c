"""The in-job view rules read: the recent saved steps in memory (older ones from disk) plus, at every step,
the cheap signals the hook measures (loss, total gradient norm, learning rate).

In our own hook's profile the signals are ordinary tensors of their collections, at every step. In the
smdebug profile they are kept apart (``signals_at``): a custom rule written for smdebug sees exactly the
tensors smdebug would have saved, while the built-in rules still check the signals at every step.
"""

from __future__ import annotations

import collections as _collections
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from debugger.core.exceptions import TensorUnavailableForStep
from debugger.core.modes import ModeKeys
from debugger.storage.step_writer import PackedSlice, to_numpy
from debugger.trial.trial import BaseTrial, Trial


def _torch():
    """torch, if the process has imported it: a job's tensors are torch tensors only then (an XGBoost job has no
    torch, and must not pay for importing it)."""
    return sys.modules.get("torch")


class LiveTrial(BaseTrial):
    def __init__(self, out_dir: Path, keep_saved_steps: int = 1, expose_signals: bool = True, flush: Callable[[], None] | None = None):
        super().__init__()
        self.out_dir = Path(out_dir)
        self.expose_signals = expose_signals
        self._flush = flush
        self._membership: dict[str, set[str]] = {}
        self._scalars: dict[str, dict[int, float]] = {}
        self._signals: dict[int, dict[str, tuple[tuple[str, ...], float]]] = {}
        self._saved: _collections.OrderedDict[int, dict[str, Any]] = _collections.OrderedDict()
        self._keep = keep_saved_steps
        self._disk: Trial | None = None
        self._norms: dict[tuple[int, int], dict[str, float]] = {}
        self._model_inputs: tuple[int, dict[str, Any]] = (-1, {})
        self._loss_targets: tuple[int, dict[str, Any]] = (-1, {})
        #: module path -> class name ("ReLU", "Tanh", ...) of the activation modules the hook records
        self.activation_kinds: dict[str, str] = {}
        #: tensor name -> why it cannot show a rule's problem (debugger.rules.tensor_signal), filled by the hook
        self.silent_tensors: dict[str, str] = {}
        #: the latest value of each metric the script reported (save_scalar / record_metric), for the rules that
        #: spare a run meeting its objective (debugger.rules.run_objective)
        self.latest_metrics: dict[str, float] = {}
        #: every value of each metric, in order, for the rule that judges the objective's course
        #: (debugger.rules.objective_rules)
        self.metric_history: dict[str, list[float]] = {}
        #: The hook's collections by name (set by the hook): what tensor_names(collection=...) matches names against.
        self.collection_definitions: dict[str, Any] = {}

    # --- written by the hook
    def begin_step(self, step: int, mode: ModeKeys = ModeKeys.GLOBAL, mode_step: int | None = None) -> None:
        self._index_step(step, mode, step if mode_step is None else mode_step, ())
        if self.step_numbering is not None:
            self.step_numbering.begin(step, mode)
        # signals older than what any rule looks back at are dropped; LossNotDecreasing keeps its own history
        for old in [old for old in self._signals if old < step - 1]:
            del self._signals[old]

    def set_model_inputs(self, step: int, inputs: dict[str, Any]) -> None:
        """The registered model's inputs at ``step`` (``<Model>_input_<i>``: torch tensors or arrays), kept until
        the next step's inputs replace them."""
        self._model_inputs = (step, dict(inputs))

    def set_loss_targets(self, step: int, targets: dict[str, Any]) -> None:
        """The targets a training loss read at ``step`` (its inputs after the model's output: labels, regression
        targets), kept until the next step's replace them: a non-finite target is a data error, as an input is."""
        self._loss_targets = (step, dict(targets))

    def loss_targets(self, step: int) -> dict[str, Any]:
        """The loss's targets at ``step``; {} when the step's targets are not held."""
        held_step, targets = self._loss_targets
        return dict(targets) if held_step == step else {}

    def model_inputs(self, step: int) -> dict[str, Any]:
        """The model's inputs at ``step`` (every step, saved or not); {} when the step's inputs are not held."""
        held_step, inputs = self._model_inputs
        return dict(inputs) if held_step == step else {}

    def _ensure_indexed(self, step: int) -> None:
        if step not in self._global_to_mode:
            self._index_step(step, ModeKeys.GLOBAL, step, ())

    def add_scalar(self, name: str, collection: str, step: int, value: float) -> None:
        """A visible scalar at ``step`` (a tensor of ``collection``)."""
        self._ensure_indexed(step)
        self._scalars.setdefault(name, {})[step] = value
        self._step_names.setdefault(step, set()).add(name)
        self._membership.setdefault(name, set()).add(collection)

    def add_signal(self, name: str, collections: tuple[str, ...], step: int, value: float) -> None:
        """A cheap every-step measurement; visible as a tensor only in our own profile."""
        if self.expose_signals:
            for collection in collections:
                self.add_scalar(name, collection, step, value)
        self._signals.setdefault(step, {})[name] = (collections, value)

    def add_step_tensor(self, name: str, collections: tuple[str, ...], step: int, value: Any) -> None:
        """A tensor the script handed the hook (``save_tensor``) for the built-in rules at ``step``: kept like a
        signal (dropped a step later) and never a tensor of the trial, which shows only what is saved."""
        self._signals.setdefault(step, {})[name] = (collections, value)

    def signals_at(self, step: int) -> dict[str, tuple[tuple[str, ...], float]]:
        return dict(self._signals.get(step, {}))

    def add_saved_step(self, step: int, tensors: dict[str, Any], membership: dict[str, list[str]], mode: ModeKeys = ModeKeys.GLOBAL, mode_step: int | None = None) -> None:
        if step not in self._global_to_mode:
            self._index_step(step, mode, step if mode_step is None else mode_step, ())
        held = self._saved.setdefault(step, {})
        held.update(tensors)
        self._saved.move_to_end(step)
        self._step_names.setdefault(step, set()).update(membership)
        for name, member_of in membership.items():
            self._membership.setdefault(name, set()).update(member_of)
        while len(self._saved) > self._keep:
            self._saved.popitem(last=False)

    def norms(self, step: int, order: int) -> dict[str, float]:
        """The L``order`` norm of every floating-point tensor held in memory for ``step``, in one fused torch
        call per step (cached): the built-in rules' shortcut past reading each tensor with numpy."""
        key = (step, order)
        if key not in self._norms:
            torch = _torch()
            names, tensors = [], []
            for name, value in self._saved.get(step, {}).items():
                if isinstance(value, PackedSlice):
                    value = value.packed.pieces()[value.index]  # flat views: the norm does not need the shape
                if torch is not None and isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
                    names.append(name)
                    tensors.append(value)
            values = torch.stack(torch._foreach_norm(tensors, order)).tolist() if tensors else []
            self._norms = {k: v for k, v in self._norms.items() if k[0] == step}
            self._norms[key] = dict(zip(names, values, strict=True))
        return self._norms[key]

    def numel(self, step: int, name: str) -> int | None:
        value = self._saved.get(step, {}).get(name)
        torch = _torch()
        return value.numel() if isinstance(value, (PackedSlice, *((torch.Tensor,) if torch else ()))) else None

    def value_at(self, name: str, step: int) -> np.ndarray:
        """``tensor(name).value(step)`` for a name the trial holds at ``step``, past the Tensor API's lookups (the
        built-in rules read the every-step signals so at every step)."""
        value = self._value(name, step)
        return self.tensor(name).value(step) if value is None else value

    def finite_scalars(self, step: int) -> set[str]:
        """The visible every-step scalars at ``step`` whose value is a finite number: nothing in them to read again."""
        return {
            name
            for name, series in self._scalars.items()
            if isinstance(value := series.get(step), (int, float)) and math.isfinite(value)
        }

    # --- read by rules
    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> list[int]:
        return super().steps(mode)

    def _names(self) -> dict[str, set[str]]:
        return self._membership

    def _collection_definitions(self) -> dict[str, Any]:
        return self.collection_definitions

    def _value(self, name: str, step: int) -> np.ndarray | None:
        series = self._scalars.get(name)
        if series is not None and step in series:
            return np.asarray(series[step])
        held = self._saved.get(step)
        if held is not None and name in held:
            return to_numpy(held[name])
        if name in self._step_names.get(step, ()):
            return self._from_disk(name, step)
        raise TensorUnavailableForStep(name, step)

    def _from_disk(self, name: str, step: int) -> np.ndarray | None:
        if self._flush is not None:
            self._flush()  # the step may still be in the writer's queue
        if self._disk is None:
            self._disk = Trial(self.out_dir)
        else:
            self._disk.refresh()
        return self._disk._value(name, step)
