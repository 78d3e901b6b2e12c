"""What a training script calls on the hook besides registration (a mixin of :class:`debugger.hook.pytorch.hook.Hook`):
smdebug's ``set_mode``, ``save_scalar``, ``save_tensor``, ``record_tensor_value`` and collections, and our
``record_metric``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from debugger.core.collection import DEFAULT, LOSSES, METRICS, Collection
from debugger.core.modes import ModeKeys, parse_mode
from debugger.hook.pytorch.step_capture import SCALAR_PREFIX, SMDEBUG, _copy
from debugger.storage import layout


class ScriptApi:
    def set_mode(self, mode) -> None:
        """smd.modes.TRAIN / EVAL / PREDICT / GLOBAL: the steps from now on count in that mode."""
        self.mode = parse_mode(mode, "set_mode")

    @property
    def step(self) -> int:
        """The step being run, until its check; then the next step's number."""
        if self._open is not None and not self._open.checked:
            return self._open.step
        return self._next_step

    @step.setter
    def step(self, value: int) -> None:
        """Number the next step (a resumed job goes on from where it left off)."""
        if self._open is not None and not self._open.checked:
            raise RuntimeError("hook.step can be set only between steps")
        self._next_step = int(value)
        self._next_mode_step[self.mode] = int(value)
        numbering = getattr(self.trial, "step_numbering", None)
        if numbering is not None and self.mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL):
            numbering.renumber(int(value))  # the script's own count is the step the user reads

    @property
    def mode_steps(self) -> dict[ModeKeys, int]:
        return dict(self._next_mode_step)

    def record_metric(self, name: str, value: float, step: int | None = None) -> None:
        """Record a metric (collection "metrics"); ``step`` defaults to the last completed step."""
        step = max(self._last_checked_step, 0) if step is None else int(step)
        self.trial.add_scalar(name, METRICS, step, float(value))
        self._report_metric(name, float(value), step)
        if METRICS in self.include_collections and not self.dry_run:
            layout.append_metric(self.out_dir, name, step, float(value))

    def save_scalar(self, name: str, value: Any, sm_metric: bool = False, timestamp: float | None = None) -> None:
        """smdebug's save_scalar: ``scalar/<name>`` at the current step, whatever the save configuration; its
        latest value is also reported in the rule-status document's ``metrics`` (sm_metric or not)."""
        # saved as smdebug saves it: a tensor's own shape and dtype, a Python or numpy number as a one-element array
        saved = _copy(value)
        array = np.asarray(saved.cpu() if isinstance(saved, torch.Tensor) else saved)
        if array.size != 1:
            raise ValueError(f"save_scalar: {name} must be one number; got a value of shape {array.shape}")
        number = float(array.reshape(-1)[0])
        if self._open is not None:
            self._open.record.add(SCALAR_PREFIX + name, saved, [])
        else:
            self._pending_scalars.append((SCALAR_PREFIX + name, saved))
        step = self._open.step if self._open is not None else max(self._next_step - 1, 0)
        self._report_metric(name, number, step)

    def save_tensor(self, tensor_name: str, tensor_value: Any, collections_to_write: str | list[str] = DEFAULT) -> None:
        """smdebug's save_tensor: ``tensor_value`` saved as part of the collections, when their save configuration
        saves the step; in the smdebug profile the step is the one under way when the hook next sees the model work
        (smdebug's timing), in ours the current step."""
        names = [collections_to_write] if isinstance(collections_to_write, str) else list(collections_to_write)
        if not names:
            raise ValueError("save_tensor: collections_to_write must name at least one collection")
        try:
            value = _copy(tensor_value)
        except (TypeError, ValueError) as error:
            raise ValueError(f"save_tensor: {tensor_name} is not a tensor or array: {error}") from None
        for name in names:
            self.collection_manager.get(name).add_tensor_name(tensor_name)
            self._effective_save.setdefault(name, self.save_config)
        if self.profile == SMDEBUG:
            # held until the hook next sees the model work, then part of the step under way (_take_saved_tensors)
            self._pending_custom[tensor_name] = (value, names)
            return
        target = self._open.custom if self._open is not None else self._pending_custom
        target[tensor_name] = (value, names)

    def record_tensor_value(self, tensor_name: str, tensor_value: torch.Tensor) -> None:
        """smdebug's (deprecated) way to save a functional loss: ``<tensor_name>_output_0`` at the current step."""
        if not isinstance(tensor_value, torch.Tensor):
            raise TypeError(f"record_tensor_value: tensor_value must be a torch.Tensor; got {type(tensor_value).__name__}")
        if self.collection_manager.get(LOSSES).matches(f"{tensor_name}_output_0"):
            self._loss_name = f"{tensor_name}_output_0"
            self._pending_loss = tensor_value.detach()
        if self._open is not None:
            self._offer_module_tensors(tensor_name, tensor_value, "_output_")

    # ------------------------------------------------------------------ collections (smdebug's API)

    def get_collection(self, name: str, create: bool = True) -> Collection:
        return self.collection_manager.get(name, create=create)

    def get_collections(self) -> dict[str, Collection]:
        return dict(self.collection_manager.collections)

    def add_collection(self, collection: Collection) -> None:
        self.collection_manager.add(collection)

