"""The hook's step lifecycle and tensor capture (a mixin of :class:`debugger.hook.pytorch.hook.Hook`).

A step begins at the registered model's forward pre-hook (smdebug profile: every forward, so evaluation
forwards are EVAL steps after ``set_mode``; our own profile: the first training forward after the previous
step ended) and counts a global step and a step of the current mode. Parameters are copied then (if a
collection saves them at this step), module inputs/outputs and losses as the forward runs, gradients at
the step's check: the end of ``loss.backward()`` (or ``optimizer.step``'s pre-hook when registered). The
check measures the cheap signals (loss, total gradient norm, learning rate) and runs the rules, before the
optimizer can use the step's gradients. The step's record is handed to the background writer when the step
ends: at once in our profile, at the next step's start or ``close()`` in the smdebug profile (so
``save_scalar`` / ``save_tensor`` after the optimizer step still belong to it).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from debugger.core.collection import (
    BIASES,
    GRADIENTS,
    LEARNING_RATE,
    LOSSES,
    METRICS,
    SCALAR_COLLECTIONS,
    SM_METRICS,
    WEIGHTS,
)
from debugger.core.modes import ModeKeys
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import SaveConfig
from debugger.hook.distributed import exchange_stop
from debugger.hook.pytorch.input_fingerprints import first_batch_tensor, row_fingerprint_tensor, row_fingerprints
from debugger.hook.pytorch.model_structure import active_dropout, dropout_modules, frozen_reason
from debugger.hook.pytorch.step_signals import StepLabels
from debugger.rules.rule import GRADIENT_PREFIX, TOTAL_GRADIENT_NORM
from debugger.storage.step_writer import PackedSlice, PackedTensors, StepRecord

#: Collections whose tensors are parameters or gradients (no module inputs/outputs needed for them).
PARAMETER_COLLECTIONS = frozenset({WEIGHTS, BIASES, GRADIENTS, LOSSES, METRICS, LEARNING_RATE, SM_METRICS})
SCALAR_PREFIX = "scalar/"
NATIVE = "native"
SMDEBUG = "smdebug"


@dataclasses.dataclass
class _OpenStep:
    step: int
    mode: ModeKeys
    mode_step: int
    saving: set[str]
    record: StepRecord
    checked: bool = False
    io_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    custom: dict[str, tuple[Any, list[str]]] = dataclasses.field(default_factory=dict)


def _copy(value: Any) -> Any:
    """A copy the training loop cannot change under the writer (in-place updates, zero_grad). A Python or numpy scalar
    becomes a one-element array, as smdebug saves it (np.array([value]))."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if np.isscalar(value):
        return np.array([value])
    return np.array(value, copy=True)


def _copy_all(values: list[Any]) -> tuple[list[Any], list[tuple[PackedTensors, list[int]]]]:
    """Copies of many values: tensors packed per dtype and device (``PackedTensors``), the rest one by one; and
    the packs with the positions of their tensors among ``values``."""
    copies: list[Any] = [None] * len(values)
    groups: dict[tuple, list[int]] = {}
    for index, value in enumerate(values):
        if isinstance(value, torch.Tensor) and value.numel():
            groups.setdefault((value.dtype, value.device), []).append(index)
        else:
            copies[index] = _copy(value)
    packs = []
    for indices in groups.values():
        packed = PackedTensors([values[index] for index in indices])
        for position, index in enumerate(indices):
            copies[index] = PackedSlice(packed, position)
        packs.append((packed, indices))
    return copies, packs


def _flatten(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [tensor for item in value for tensor in _flatten(item)]
    return []


class StepCapture:
    """State set up by Hook.__init__: profile, collection_manager, include_collections, save_config,
    reduction_config, trial (LiveTrial), writer, evidence, _extra_save_steps, _extra_save_every; and the spot-resume
    state (_state_store, _training_run, _last_saved_step, _judged_through: Hook._resume_interrupted_run)."""

    # ------------------------------------------------------------------ collections

    def _prepare_collections(self) -> None:
        """Give every collection its effective save and reduction configuration; check custom ones have tensors."""
        for name in self.include_collections:
            if name not in self._builtin_names and not self.collection_manager.get(name).is_configured:
                self._raise_unconfigured(name)
        version = self.collection_manager.version()
        if version == self._prepared_version:
            return
        self._effective_save = {}
        self._effective_reduction = {}
        for name, collection in self.collection_manager.collections.items():
            save = collection.save_config
            self._effective_save[name] = self.save_config if save is None else save.merged_with(self.save_config)
            reduction = collection.reduction_config or self.reduction_config
            self._effective_reduction[name] = None if name in SCALAR_COLLECTIONS else reduction
            for module, (inputs, outputs) in collection.modules.items():
                module_name = self._module_names.get(module)
                if module_name is None:
                    continue  # not a module of the registered model (yet)
                # smdebug's patterns, unanchored: "fc2_input_" (its tensors are named <module>_input_<i>)
                patterns = ([f"{module_name}_input_"] if inputs else []) + ([f"{module_name}_output_"] if outputs else [])
                for pattern in patterns:
                    if pattern not in collection.include_regex:
                        collection.include(pattern)
        self._io_collections = {
            name
            for name in self.include_collections
            if name not in PARAMETER_COLLECTIONS
            or self.collection_manager.get(name).include_regex != self._builtin_patterns.get(name)
        }
        self._membership_cache = {}
        self._settings_cache: dict[tuple[str, ...], tuple] = {}
        self._prepared_version = self.collection_manager.version()

    def _membership(self, tensor_name: str) -> tuple[str, ...]:
        """The included collections ``tensor_name`` belongs to (cached until a collection changes)."""
        found = self._membership_cache.get(tensor_name)
        if found is None:
            found = tuple(
                name for name in self.include_collections if self.collection_manager.get(name).matches(tensor_name)
            )
            self._membership_cache[tensor_name] = found
        return found

    def _save_settings(self, collections: list[str]) -> tuple[bool, list[tuple[str, bool]], bool]:
        """(save the raw tensor, reductions, save the shape) for a tensor saved by these collections."""
        key = tuple(collections)
        found = self._settings_cache.get(key)
        if found is None:
            found = self._settings_cache[key] = self._combine_settings(collections)
        return found

    def _combine_settings(self, collections: list[str]) -> tuple[bool, list[tuple[str, bool]], bool]:
        raw, reductions, shape = False, [], False
        for name in collections:
            config: ReductionConfig | None = self._effective_reduction.get(name)
            if config is None:
                raw = True
                continue
            raw = raw or config.saves_raw
            reductions.extend(config.reduction_list())
            shape = shape or config.save_shape
        return raw, list(dict.fromkeys(reductions)), shape

    def _offer(self, name: str, value: Any, extra: tuple[str, ...] = ()) -> None:
        """Add ``value`` to the open step's record if a collection saving at this step holds ``name``."""
        self._offer_many([(name, value, extra)])

    def _offer_many(self, items: list[tuple[str, Any, tuple[str, ...]]]) -> None:
        """Like ``_offer`` for many tensors at once: the tensors kept are copied together (``_copy_all``)."""
        open_step = self._open
        if open_step is None or not open_step.saving:
            return
        kept = []
        for name, value, extra in items:
            collections = [c for c in dict.fromkeys((*self._membership(name), *extra)) if c in open_step.saving]
            if collections:
                kept.append((name, value, collections))
        copies, packs = _copy_all([value for _, value, _ in kept])
        for (name, _, collections), copy in zip(kept, copies, strict=True):
            raw, reductions, shape = self._save_settings(collections)
            open_step.record.add(name, copy, collections, raw=raw, reductions=reductions, shape=shape)
        for packed, indices in packs:
            open_step.record.buffers.append((packed, [(kept[index][0], copies[index]) for index in indices]))

    # ------------------------------------------------------------------ step lifecycle

    def _begin_step(self) -> None:
        self._prepare_collections()
        with self._state_lock:  # the checkpoint watch reads these between steps
            self._record_state_if_checkpointed()
            step = self._next_step
            mode = self.mode
            mode_step = self._next_mode_step.get(mode, 0)
            self._next_step = step + 1
            self._next_mode_step[mode] = mode_step + 1
            # the trial's step numbering counts the step under the same lock: a state recorded between steps
            # pairs its global step with the optimizer counts of the same moment
            self.trial.begin_step(step, mode, mode_step)
        saving = {
            name
            for name in self.include_collections
            if self._effective_save[name].should_save_step(mode, mode_step)
            or mode_step in self._extra_save_steps.get(name, ())
            or (
                mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL)
                and any(
                    mode_step % every == 0 and (until is None or mode_step <= until)
                    for every, until in self._extra_save_every.get(name, ())
                )
            )
        }
        if mode in (ModeKeys.EVAL, ModeKeys.PREDICT):
            saving.discard(GRADIENTS)  # no backward pass there: the gradients are a training step's
        self._open = _OpenStep(step, mode, mode_step, saving, StepRecord(step, mode.name, mode_step))
        self._capture_io = bool(saving & self._io_collections)
        self._watch_module_io(self._capture_io)
        for name, value in self._pending_scalars:
            self._open.record.add(name, value, [])
        self._pending_scalars = []
        # save_tensor between steps (before the model's forward pass) belongs to the step that begins now
        self._open.custom.update(self._pending_custom)
        self._pending_custom = {}
        self._snapshot_parameters()

    def _snapshot_parameters(self) -> None:
        """Parameters are saved as the step starts, before this step's update (as smdebug does)."""
        if self._open.saving:
            self._offer_many([(name, parameter, ()) for name, parameter in self._parameters + self._frozen_parameters])

    def _builtin_of(self, name: str) -> tuple[str, ...]:
        return tuple(collection for collection in (WEIGHTS, BIASES) if self.collection_manager.get(collection).matches(name))

    def _check_step(self, collective: bool = False, judge_gradients: bool = True) -> None:
        """The step's check: signals, gradients, rules. Raises StopTrainingRequested when a rule stops training.

        ``collective``: a training step's check, which every rank makes at the same step (the end of backward or
        the optimizer step), so the ranks can exchange whether one of them stops (debugger.hook.distributed).
        ``judge_gradients=False``: the gradients are not this step's to judge (AMP's GradScaler found them
        non-finite at its loss scale and skipped the optimizer step): neither measured nor saved."""
        if self._stop is not None:
            raise self._stop
        if self._open is None:
            self._begin_step()
        open_step = self._open
        if open_step.checked:
            return
        step = open_step.step
        training = open_step.mode not in (ModeKeys.EVAL, ModeKeys.PREDICT)
        # the gradients are this step's only when its check comes from its backward pass (or optimizer step): a step
        # closed without one (an evaluation forward of a script that never calls set_mode) holds the previous
        # step's gradients, which are not its own; nor are gradients GradScaler found non-finite (judge_gradients)
        with_gradients = training and collective and judge_gradients
        # the step's one read from the device (step_signals)
        signals = self._signals.read(self._parameters if with_gradients else None, self._pending_loss)
        gradient_norm, loss = signals.gradient_norm, signals.loss
        for counts, matched, dropout in signals.labels:
            if any(counts):  # a batch whose labels were all ignore_index says nothing of the classes
                self._note_training_labels(counts, matched, dropout)
        for fingerprints in signals.inputs:
            self._input_repeats.add(fingerprints)
        learning_rate = self._learning_rate()
        self.last_loss, self.last_gradient_norm = loss, gradient_norm
        self._update_evidence(step, loss, gradient_norm, training=with_gradients)
        if gradient_norm is not None:
            self.trial.add_signal(TOTAL_GRADIENT_NORM, (GRADIENTS,), step, gradient_norm)
        if loss is not None:
            self.trial.add_signal(self._loss_name, (LOSSES,), step, loss)
        if learning_rate is not None:
            self.trial.add_signal(LEARNING_RATE, (LEARNING_RATE,), step, learning_rate)

        nonfinite = (gradient_norm is not None and not math.isfinite(gradient_norm)) or (loss is not None and not math.isfinite(loss))
        forced = nonfinite and not self._nonfinite_saved
        if forced:
            # keep the first non-finite step for the post-mortem, whatever the save configuration
            self._nonfinite_saved = True
            open_step.saving |= {GRADIENTS, WEIGHTS, BIASES, LOSSES}
            self._offer_many(
                [(name, parameter, self._builtin_of(name)) for name, parameter in self._parameters if name not in open_step.record.tensors]
            )
            if loss is not None:
                open_step.record.add(self._loss_name, np.float64(loss), [LOSSES])
        if training and open_step.saving:
            # a parameter frozen after register_module (fine-tuning schedules): the rules skip it from now on
            frozen = {name: frozen_reason() for name, parameter in self._parameters if not parameter.requires_grad}
            if frozen:
                self._note_silent(frozen)
        if with_gradients and open_step.saving & (self._io_collections | {GRADIENTS}):
            extra = (GRADIENTS,) if forced else ()
            self._offer_many(
                [(GRADIENT_PREFIX + name, parameter.grad, extra) for name, parameter in self._parameters if parameter.grad is not None]
            )
        if self.profile == NATIVE:
            # our profile saves the signals themselves as the step's scalars
            for name, value, collection in (
                (TOTAL_GRADIENT_NORM, gradient_norm, GRADIENTS),
                (self._loss_name, loss, LOSSES),
                (LEARNING_RATE, learning_rate, LEARNING_RATE),
            ):
                if value is not None and collection in open_step.saving:
                    open_step.record.add(name, np.float64(value), [collection])
        for name, (value, collections) in open_step.custom.items():
            # labels, predictions, inputs the script saved (ClassImbalance): seen by the rules at every step
            self.trial.add_step_tensor(name, tuple(collections), step, value)
        open_step.checked = True
        self._last_checked_step = step
        if self._stall_watchdog is not None:
            self._stall_watchdog.note_progress(step)
        if open_step.record:
            self.trial.add_saved_step(step, dict(open_step.record.tensors), open_step.record.membership, open_step.mode, open_step.mode_step)
        self._pending_loss = None
        if step > self._judged_through:  # a restarted job's rules do not judge again what the interrupted run did
            self._evaluate_rules(step, learning_rate)
        if self.tensorboard is not None:
            self._write_tensorboard(open_step, training, loss, gradient_norm, learning_rate)
        if collective and self.worker_role.distributed:
            exchange_stop(self, step)
        if self._stop is not None:
            self._finalize_open_step()
            self._flush_writer()
            raise self._stop

    def _write_tensorboard(
        self, open_step: _OpenStep, training: bool, loss: float | None, gradient_norm: float | None, learning_rate: float | None
    ) -> None:
        """The step's TensorBoard scalars (and histograms at a saved step): :mod:`debugger.storage.tensorboard_events`."""
        if not training:
            self.tensorboard.evaluation_step(open_step.step, loss)
            return
        self.tensorboard.training_step(
            open_step.step,
            loss=loss,
            gradient_norm=gradient_norm,
            learning_rate=learning_rate,
            parameters=self._parameters,
            rule_statuses=[(state.spec.name, state.status) for state in self._rules],
            saved=bool(open_step.saving),
        )
        if self._stop is not None:
            self.tensorboard.flush()  # the step that stopped training is on disk before the job ends

    def _close_open_step(self) -> None:
        """End the open step: its check if it had none (an evaluation step), then hand its record to the writer."""
        if self._open is None:
            return
        if not self._open.checked:
            self._check_step()
        self._finalize_open_step()

    def _finalize_open_step(self) -> None:
        open_step, self._open = self._open, None
        self._capture_io = False
        if open_step is None:
            return
        for name, (value, collections) in open_step.custom.items():
            saving = [
                collection
                for collection in collections
                if self._effective_save.get(collection, self.save_config).should_save_step(open_step.mode, open_step.mode_step)
            ]
            if saving:
                raw, reductions, shape = self._save_settings(saving)
                open_step.record.add(name, value, saving, raw=raw, reductions=reductions, shape=shape)
        if open_step.record and not self.dry_run:
            self._writer.submit(open_step.record)
            self._last_saved_step = open_step.step
            if not self._collections_written:
                self._write_collections()

    # ------------------------------------------------------------------ torch hooks

    def _on_forward_start(self, module: torch.nn.Module, inputs: Any) -> None:
        if self._stall_watchdog is not None:
            self._stall_watchdog.note_progress()  # an evaluation loop makes no steps, yet it is progress
        if self._stop is not None and module.training:
            raise self._stop
        began = False
        if self.profile == SMDEBUG:
            self._close_open_step()
            self._begin_step()
            began = True
        elif self._open is None and module.training and torch.is_grad_enabled():
            self._begin_step()
            began = True
        if module is self._top_module and module.training and self._training_now():
            self._note_training_inputs(inputs)
        if began:
            # references, not copies: rules that read the model's input at every step (CheckInputImages) get it
            # without a save; the trial drops them when the next step begins
            prefix = f"{self._module_names[module]}_input_"
            self.trial.set_model_inputs(
                self._open.step, {f"{prefix}{index}": tensor.detach() for index, tensor in enumerate(_flatten(inputs))}
            )
        if self._capture_io:
            self._offer_module_tensors(self._module_names[module], inputs, "_input_")

    def _training_now(self) -> bool:
        """Whether the script is on a training step: TRAIN mode, or GLOBAL (a script that never calls set_mode; its
        evaluation runs without gradients), with gradients on."""
        return self.mode in (ModeKeys.TRAIN, ModeKeys.GLOBAL) and torch.is_grad_enabled()

    def _note_training_inputs(self, inputs: Any) -> None:
        """A training forward pass's input rows, fingerprinted (contracts.training_inputs: were they augmented?)."""
        batch = first_batch_tensor(inputs)
        if batch is not None:
            if batch.device.type == "cpu":
                self._input_repeats.add(row_fingerprints(batch))
            else:  # hashed on the device, read with the step's other signals at its check
                self._signals.inputs.append(row_fingerprint_tensor(batch))

    def _take_saved_tensors(self) -> None:
        """What the script handed save_tensor joins the step under way when the hook next sees the model work (a
        module's output, a gradient), as smdebug's hook writes it then: a tensor saved before the forward pass goes
        with that pass's step, one saved after an evaluation step's forward pass with the next step."""
        if self._pending_custom and self._open is not None:
            self._open.custom.update(self._pending_custom)
            self._pending_custom = {}

    def _on_module_output(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        self._take_saved_tensors()
        if not self._capture_io:
            return
        name = self._module_names[module]
        if module is not self._top_module:
            self._offer_module_tensors(name, inputs, "_input_")
        self._offer_module_tensors(name, output, "_output_")

    def _offer_module_tensors(self, module_name: str, value: Any, suffix: str) -> None:
        counts = self._open.io_counts
        for tensor in _flatten(value):
            key = module_name + suffix
            index = counts.get(key, 0)
            counts[key] = index + 1
            self._offer(f"{key}{index}", tensor)

    def _on_loss(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        self._take_saved_tensors()
        if not isinstance(output, torch.Tensor):
            return
        self.note_loss_inputs(inputs, type(module).__name__)
        if self.profile == NATIVE:
            if torch.is_grad_enabled():
                self._pending_loss = output.detach()
            return
        self._pending_loss = output.detach()
        if self._open is not None and self._open.saving:
            name = self._module_names[module]
            self._offer_module_tensors(name, inputs, "_input_")
            self._offer_module_tensors(name, output, "_output_")

    def note_loss_inputs(self, inputs: Any, loss_name: str | None = None) -> None:
        """A loss module's inputs on a training step: class scores (N x C) and class-index labels (N), as
        nn.CrossEntropyLoss and nn.NLLLoss take them, are counted (contracts.training_labels). Anything else (soft
        or binary targets, a regression) says nothing about class labels and is passed over."""
        if not self._training_now() or not isinstance(inputs, tuple):
            return
        if self._open is not None:
            # references, not copies: ExplodingTensor reads them only when a tensor of the step is not finite
            targets = {f"loss_target_{index}": tensor.detach() for index, tensor in enumerate(inputs[1:], start=1)
                       if isinstance(tensor, torch.Tensor)}  # fmt: skip
            self.trial.set_loss_targets(self._open.step, targets)
        if len(inputs) < 2 or not all(isinstance(tensor, torch.Tensor) for tensor in inputs[:2]):
            return
        self._note_target_scale(inputs[0], inputs[1], loss_name)
        scores, labels = inputs[0], inputs[1]
        if scores.dim() != 2 or labels.dim() != 1 or labels.dtype not in (torch.int64, torch.int32):
            return
        if scores.shape[0] != labels.shape[0] or not scores.is_floating_point():
            return
        # tallied on the labels' device, read with the step's other signals at its check (step_signals)
        self._signals.labels.append(StepLabels(scores, labels, self._active_dropout()))

    def _note_target_scale(self, outputs: torch.Tensor, targets: torch.Tensor, loss_name: str | None) -> None:
        """At the first training step whose loss compares real-valued targets with as many outputs (a regression):
        the root mean square of each, which the planner compares (a target scale far from what the outputs start at
        needs its targets scaled, or a rate scaled with them)."""
        if self.evidence.target_rms is not None or not (outputs.is_floating_point() and targets.is_floating_point()):
            return
        if outputs.numel() != targets.numel() or outputs.numel() == 0:
            return
        with torch.no_grad():
            finite = targets.detach()[torch.isfinite(targets.detach())]
            if finite.numel() == 0:
                return
            output_rms = float(outputs.detach().double().pow(2).mean().sqrt())
            if output_rms == output_rms and output_rms != float("inf"):  # finite: a model's first outputs
                self.evidence.target_rms = float(finite.double().pow(2).mean().sqrt())
                self.evidence.output_rms = output_rms
                self.evidence.target_loss = loss_name

    def _active_dropout(self) -> float | None:
        """The largest probability of the watched model's dropout modules in training mode (None: none is)."""
        model = self._top_module
        if model is None:
            return None
        if self._dropout_modules[0] is not model:  # the modules are listed once: a step checks only their modes
            self._dropout_modules = (model, dropout_modules(model))
        return active_dropout(self._dropout_modules[1])

    def _on_gradient(self, parameter: torch.Tensor) -> None:
        self._take_saved_tensors()
        if not self._callback_queued:
            self._callback_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._on_backward_end)

    def _on_backward_end(self) -> None:
        self._callback_queued = False
        self.end_step()

    def _on_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.end_step()

    def end_step(self, judge_gradients: bool = True) -> None:
        """The step's check (called by the torch hooks); our profile also ends the step here."""
        self._check_step(collective=True, judge_gradients=judge_gradients)
        if self.profile == NATIVE:
            self._finalize_open_step()

    def _learning_rate(self) -> float | None:
        if self._optimizer is not None:
            return float(self._optimizer.param_groups[0]["lr"])
        if self._context_learning_rate is None and self._observed_optimizer is not None:
            return float(self._observed_optimizer.param_groups[0]["lr"])
        return self._context_learning_rate

    def _effective_save_config(self, collection: str) -> SaveConfig:
        return self._effective_save.get(collection, self.save_config)
