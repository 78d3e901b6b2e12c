"""Zero script change for PyTorch: the job's hook watches a script that creates none, through PyTorch's global hooks.

Installed by the job launcher when the script imports torch (:mod:`debugger.hook.zero_change`). What it watches:

* the model: every module the script calls outermost (not inside another module's forward) in training mode with
  gradients enabled and trainable parameters of its own. It is named as ``hook.register_module(model)`` names it
  (a second model's names start with its class name); a DistributedDataParallel or DataParallel wrapper is seen
  through to the model it wraps. Global module forward hooks (``torch.nn.modules.module.
  register_module_forward_pre_hook`` / ``register_module_forward_hook``) see every call.
* the step: one optimizer step, a TRAIN step. It begins at the model's first training forward (train mode, gradients
  on) after the previous step and is checked in the optimizer's pre-hook (``torch.optim.optimizer.
  register_optimizer_step_pre_hook``), before the update: the gradients of every watched parameter (the models' and
  the optimizers'), the loss, the learning rate, then every rule, with StopTraining, exactly as an explicit hook with
  ``register_optimizer`` does. Gradient accumulation (several ``backward()`` calls per optimizer step) is one step;
  several optimizers stepping after one backward are one step. ``optimizer.step(closure)`` (LBFGS, PyTorch
  Lightning) is checked at the end of the closure's first ``backward()``, still before the update.
* evaluation: a forward of a watched model in eval mode or without gradients is an EVAL step (ended by the next
  forward), as a script written for smdebug marks it with ``set_mode(EVAL)``; its loss is the loss module's output.
  Rules that prefer evaluation steps (LossNotDecreasing) read those, as they would for that script.
* the loss: the sum of the tensors ``backward()`` was called on during the step (``torch.autograd.backward``, which
  ``Tensor.backward`` calls, is wrapped): with accumulation of ``loss / n``, the mean loss; named
  ``<LossClass>_output_0`` when it is a loss module's output (``torch.nn.modules.loss._Loss``), else
  ``loss_output_0``.
* AMP: a loss scaled by ``torch.amp.GradScaler.scale`` is recorded unscaled. When the scaler finds non-finite
  gradients at its scale and skips the optimizer step, the step is checked at ``scaler.update()`` on its loss alone:
  those gradients are the scale's overflow, not the model's, and are neither judged nor saved.
* torch.distributed: the hook is created at the first training step, once the process group exists, so it takes
  its rank and the ranks exchange stops at each step's check as an explicit hook's do.

Refused, with :class:`debugger.hook.zero_change.ZeroScriptChangeRefused` naming the fix: optimizers that take turns, each
after a backward of its own (a GAN: one series of steps would mix two losses), and a script that updates its
parameters itself (no optimizer step between two backward calls while the parameters changed).

A hook the script creates itself wins: the automatic hook removes its global hooks and, if it had begun recording,
closes and removes its own output so the script's hook starts on a clean directory.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_hooks

from debugger.core.log_lines import say
from debugger.core.modes import ModeKeys
from debugger.hook.container_config import read_container_hook_config, rule_configs_from_environment
from debugger.hook.hook_base import HookBase, add_creation_listener, remove_creation_listener
from debugger.hook.pytorch.hook import Hook
from debugger.hook.pytorch.step_capture import _flatten
from debugger.hook.zero_change import EXPLICIT_HOOK_ADVICE, StandsAside, ZeroScriptChangeRefused

#: Modules that wrap the model they train: named and watched through to it (torch.compile's OptimizedModule too:
#: :func:`wrapped_model`).
MODEL_WRAPPERS = (nn.parallel.DistributedDataParallel, nn.DataParallel)
LOSS_MODULES = (nn.modules.loss._Loss,)
FUNCTIONAL_LOSS_NAME = "loss_output_0"


class AutomaticHook(Hook):
    """The job's hook (our own profile) for a script without one: models are adopted as the global hooks see them,
    not registered, and no hook of its own is put on any module."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._tops: set[nn.Module] = set()
        self._wrapped: dict[nn.Module, nn.Module] = {}
        self._optimizer_shapes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @classmethod
    def from_job_config(cls) -> AutomaticHook:
        """From the files the job launcher wrote (as ``smd.Hook.create_from_json_file()`` reads them)."""
        return cls.from_configs(hook_config=read_container_hook_config(), rule_configs=rule_configs_from_environment())

    def model_of(self, module: nn.Module) -> nn.Module:
        return self._wrapped.get(module, module)

    def adopt(self, module: nn.Module) -> nn.Module:
        """Watch ``module`` (seen through a DDP/DataParallel wrapper): its modules named, its trainable parameters
        watched. Names given before stay: a tensor keeps its name for the whole run."""
        model, compiled = module, False
        while (inner := wrapped_model(model)) is not None:
            compiled = compiled or _is_compiled(model)
            model = inner
        if model is not module:
            self._wrapped[module] = model
        if model not in self._tops:
            prefix = f"{model._get_name()}." if self._tops else ""
            named_before = dict(self._module_names)
            self._name_modules(model, prefix)
            self._module_names.update(named_before)
            if self._top_module is None:
                self._top_module = model
            self._tops.add(model)
            known = {id(parameter) for _, parameter in self._parameters}
            self._parameters = self._parameters + [
                (prefix + name, parameter)
                for name, parameter in model.named_parameters()
                if parameter.requires_grad and id(parameter) not in known
            ]
            # its frozen parameters and normalized biases, skipped by the rules (adopted as its training forward begins);
            # a compiled model runs its graph, not its modules' hooks: only the frozen parameters are found
            self._watch_structure(model, prefix, forward_under_way=True, trace_forward=not compiled)
            if compiled:
                say(COMPILED_MODEL_WATCHED.format(model=model._get_name()))
        if model is not module:
            self._module_names[module] = self._module_names[model]
        return model

    def watch_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """The optimizer of this step: its learning rate is recorded; its parameters no model holds are watched too."""
        self._optimizer = optimizer
        shape = tuple(len(group["params"]) for group in optimizer.param_groups)
        if self._optimizer_shapes.get(optimizer) == shape:
            return
        self._optimizer_shapes[optimizer] = shape
        known = {id(parameter) for _, parameter in self._parameters}
        added = [
            (f"{type(optimizer).__name__}.group{g}.param{i}", parameter)
            for g, group in enumerate(optimizer.param_groups)
            for i, parameter in enumerate(group["params"])
            if parameter.requires_grad and id(parameter) not in known
        ]
        if added:
            self._parameters = self._parameters + added

    def forward_start(self, model: nn.Module, inputs: Any, training: bool) -> None:
        """A watched model's forward begins. Training (train mode, gradients on): a TRAIN step begins unless one is
        under way (gradient accumulation). Evaluation (``model.eval()`` or ``torch.no_grad()``): an EVAL step, as a
        script written for smdebug marks them with ``set_mode``; it ends where the next forward begins."""
        if self._stall_watchdog is not None:
            self._stall_watchdog.note_progress()
        if self._stop is not None and training:
            raise self._stop
        if training:
            self._note_training_inputs(inputs)
        open_step = self._open
        if open_step is not None and open_step.mode is ModeKeys.EVAL:
            self._close_open_step()
            open_step = None
        if open_step is None:
            self.mode = ModeKeys.TRAIN if training else ModeKeys.EVAL
            self._begin_step()
            # references, not copies, for the rules that read the model's input at every step (CheckInputImages)
            prefix = f"{self._module_names[model]}_input_"
            self.trial.set_model_inputs(
                self._open.step, {f"{prefix}{index}": tensor.detach() for index, tensor in enumerate(_flatten(inputs))}
            )
        if self._capture_io:
            self._offer_module_tensors(self._module_names[model], inputs, "_input_")

    def evaluation_loss(self, loss: torch.Tensor, name: str) -> None:
        """A loss module's output during an EVAL step: that step's loss."""
        if self._open is not None and self._open.mode is ModeKeys.EVAL and not self._open.checked:
            self._pending_loss = loss.detach()
            self._loss_name = name

    def _on_module_output(self, module: nn.Module, inputs: Any, output: Any) -> None:
        if not self._capture_io:
            return
        name = self._module_names[module]
        if module not in self._tops:  # a model's inputs were offered as its forward began
            self._offer_module_tensors(name, inputs, "_input_")
        self._offer_module_tensors(name, output, "_output_")


#: What the job's log says of a torch.compile'd model (its graph runs no module hooks, so no layer outputs are saved).
COMPILED_MODEL_WATCHED = (
    "watching the compiled {model} from outside its graph: its parameters, gradients, loss and optimizer steps; "
    "its layers' outputs are not saved"
)


def _is_compiled(module: nn.Module) -> bool:
    """torch.compile's wrapper (looked up only once the script compiled something: importing dynamo costs seconds)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return eval_frame is not None and isinstance(module, eval_frame.OptimizedModule)


def wrapped_model(module: nn.Module) -> nn.Module | None:
    """The model a wrapper runs (DDP's and DataParallel's ``module``, a compiled model's ``_orig_mod``), else None."""
    if isinstance(module, MODEL_WRAPPERS):
        return module.module
    if _is_compiled(module):
        return module._orig_mod
    return None


#: A Keras 3 script on the torch backend: what would watch it (tests/.../test_zero_change.py keeps the exact text).
KERAS_ADVICE = (
    "watch it from the script instead: a Keras 3 model on the torch backend is a torch.nn.Module, so "
    "import smdebug.pytorch as smd; hook = smd.Hook.create_from_json_file(); hook.register_module(model) before "
    "model.fit(): that hook checks each step at the end of its backward (see debugger/README.md)"
)


def self_updating_refusal(keras_version: str | None) -> tuple[str, str]:
    """Why a script that changes its parameters between two backward calls with no torch.optim step is refused, and
    what would watch it; ``keras_version``: Keras's trainer called that backward (:func:`keras_on_the_stack`)."""
    if keras_version is not None:
        return (
            f"the script trains with Keras{' ' + keras_version if keras_version else ''} (torch backend), whose "
            "trainer applies its own optimizer's updates: no torch.optim optimizer step, which is where the "
            "zero-change hook counts and checks a step",
            KERAS_ADVICE,
        )
    return (
        "backward() was called again with no torch.optim optimizer step in between while the parameters changed: "
        "the script updates them itself, and the zero-change hook counts and checks a step at each optimizer.step()",
        EXPLICIT_HOOK_ADVICE,
    )


def keras_on_the_stack() -> str | None:
    """Keras's version when code of the keras package called this (its trainer runs the backward), else None."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").partition(".")[0] == "keras":
            return str(getattr(sys.modules.get("keras"), "__version__", ""))
        frame = frame.f_back
    return None


def _has_trainable_parameters(module: nn.Module) -> bool:
    return any(parameter.requires_grad for parameter in module.parameters())


def _single_tensor(tensors: Any) -> torch.Tensor | None:
    if isinstance(tensors, torch.Tensor):
        return tensors
    if isinstance(tensors, (list, tuple)) and len(tensors) == 1 and isinstance(tensors[0], torch.Tensor):
        return tensors[0]
    return None


def _describe_optimizers(optimizers: list[torch.optim.Optimizer]) -> str:
    return ", ".join(
        f"{type(optimizer).__name__} over {sum(len(group['params']) for group in optimizer.param_groups)} parameter tensors"
        for optimizer in optimizers
    )


class TorchWatcher(StandsAside):
    """The global hooks and the wrapped functions, and the step they see. ``hook_factory`` builds the job's hook at
    the first training step (default: from the job's configuration files)."""

    def __init__(self, hook_factory: Callable[[], AutomaticHook] | None = None):
        self._factory = hook_factory or AutomaticHook.from_job_config
        self.hook: AutomaticHook | None = None
        self.stood_aside = False
        self._installed = False
        self._starting = False
        self._forked = False
        self._handles: list[Any] = []
        #: the global module hooks, on only while they are needed (_set_module_hooks)
        self._module_handles: list[Any] = []
        #: the models the script calls and its loss modules, watched by hooks of their own while the global ones are off
        self._direct: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._restore: list[tuple[Any, str, Any]] = []
        self._local = threading.local()
        # the step under way
        self._losses: list[torch.Tensor] = []
        self._loss_name = FUNCTIONAL_LOSS_NAME
        self._backward_since_check = False
        self._optimizer_seen = False
        self._versions: list[int] | None = None
        self._stepping_without_backward: torch.optim.Optimizer | None = None
        self._checked_in_closure = False
        self._checkers: list[torch.optim.Optimizer] = []
        self._loss_output: weakref.ref | None = None
        self._loss_output_name = FUNCTIONAL_LOSS_NAME
        self._scaled: tuple[weakref.ref, torch.Tensor] | None = None

    # ------------------------------------------------------------------ installing

    def install(self) -> None:
        """Put the global hooks in place and wrap ``torch.autograd.backward`` and GradScaler's ``scale`` / ``update``."""
        if self._installed or self.stood_aside:
            return
        self._installed = True
        self._handles = [
            optimizer_hooks.register_optimizer_step_pre_hook(self._before_optimizer_step),
            optimizer_hooks.register_optimizer_step_post_hook(self._after_optimizer_step),
        ]
        self._set_module_hooks(True)
        self._wrap(torch.autograd, "backward", self._backward_wrapper)
        # torch warns that global hooks also fire for torch.compile's wrapper: the watcher sees through the wrapper
        # (wrapped_model), so the warning would only blame the script for the debugger's hooks
        warnings.filterwarnings("ignore", message=r"Using `torch\.compile\(module\)` when there are global hooks")
        scaler = getattr(getattr(torch, "amp", None), "GradScaler", None)
        if scaler is not None:
            self._wrap(scaler, "scale", self._scale_wrapper)
            self._wrap(scaler, "update", self._update_wrapper)
        add_creation_listener(self._on_hook_creation)

    def uninstall(self) -> None:
        """Remove the global hooks and restore the wrapped functions (the job's hook, if any, stays open)."""
        if not self._installed:
            return
        self._installed = False
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._set_module_hooks(False)
        for handles in self._direct.values():
            for handle in handles:
                handle.remove()
        self._direct.clear()
        for owner, name, original in reversed(self._restore):
            setattr(owner, name, original)
        self._restore = []
        remove_creation_listener(self._on_hook_creation)

    def _wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        wrapper = functools.wraps(original)(make(original))
        self._restore.append((owner, name, original))
        setattr(owner, name, wrapper)

    def _backward_wrapper(self, original: Callable) -> Callable:
        def backward(*args: Any, **kwargs: Any) -> Any:
            outermost = self._before_backward(args, kwargs)
            result = original(*args, **kwargs)
            if outermost:
                self._after_backward()
            return result

        return backward

    def _scale_wrapper(self, original: Callable) -> Callable:
        def scale(scaler: Any, outputs: Any) -> Any:
            scaled = original(scaler, outputs)
            if isinstance(outputs, torch.Tensor) and isinstance(scaled, torch.Tensor) and scaled is not outputs:
                self._scaled = (weakref.ref(scaled), outputs)  # until the backward of ``scaled`` takes it
            return scaled

        return scale

    def _update_wrapper(self, original: Callable) -> Callable:
        def update(scaler: Any, *args: Any, **kwargs: Any) -> Any:
            if self._backward_since_check and self.hook is not None and not self._forked:
                # the scaler found non-finite gradients at its scale and skipped the optimizer step: a step all the
                # same, judged on its loss (a non-finite loss is an explosion whatever the scale)
                self._check(None, judge_gradients=False)
            return original(scaler, *args, **kwargs)

        return update

    # ------------------------------------------------------------------ the hook's life

    def _start(self) -> AutomaticHook | None:
        if self.hook is None and not self.stood_aside:
            self._starting = True
            try:
                self.hook = self._factory()
            finally:
                self._starting = False
            print(
                "[debugger] zero script change: the script creates no hook, so the job's debugger watches its models "
                "and optimizers through PyTorch's global hooks",
                file=sys.stderr,
                flush=True,
            )
        return self.hook

    def _on_hook_creation(self, hook: HookBase | None) -> None:
        if self._starting or isinstance(hook, AutomaticHook) or (hook is not None and not isinstance(hook, Hook)):
            return  # our own hook, or another framework's
        self.stand_aside()

    def _refuse(self, reason: str, advice: str = EXPLICIT_HOOK_ADVICE) -> None:
        hook, self.hook = self.hook, None
        self.uninstall()
        self.stood_aside = True
        if hook is not None:
            hook.close(training_ended=False)
        raise ZeroScriptChangeRefused(f"{reason}; {advice}")

    # ------------------------------------------------------------------ modules

    def _set_module_hooks(self, on: bool) -> None:
        """The global module hooks make every module call of the process take nn.Module's slow path and run the
        watcher's Python twice: on until the first step found the models and losses, then only for steps that save
        (module inputs and outputs are captured there, and a model the script began to train since is found); the
        models and losses found are watched by hooks of their own in between (decision 155)."""
        if on == bool(self._module_handles):
            return
        if on:
            self._module_handles = [
                module_hooks.register_module_forward_pre_hook(self._global_forward_pre),
                module_hooks.register_module_forward_hook(self._global_forward_post, always_call=True),
            ]
            return
        for handle in self._module_handles:
            handle.remove()
        self._module_handles = []

    def _watch_directly(self, module: nn.Module) -> None:
        if module not in self._direct:
            self._direct[module] = [
                module.register_forward_pre_hook(self._forward_pre),
                module.register_forward_hook(self._forward_post, always_call=True),
            ]

    def _global_forward_pre(self, module: nn.Module, args: Any) -> None:
        # first: dynamo traces global hooks into a compiled model's graph, where they must do nothing (_forward_pre)
        if not torch.compiler.is_compiling() and module not in self._direct:  # else its own hook runs next
            self._forward_pre(module, args)

    def _global_forward_post(self, module: nn.Module, args: Any, output: Any) -> None:
        if not torch.compiler.is_compiling() and module not in self._direct:
            self._forward_post(module, args, output)

    def _forward_pre(self, module: nn.Module, args: Any) -> None:
        if torch.compiler.is_compiling():
            # dynamo traces the global hooks into a compiled model's graph: they must do nothing there (a side effect
            # fails the compile). The compiled model's own call runs eagerly, and is watched as a DDP wrapper is.
            return
        local = self._local
        if getattr(local, "outer", None) is not None or self._forked:
            return
        local.outer = module
        if self._checked_in_closure and self._stepping_without_backward is not None:
            return  # the closure evaluated again inside a step already judged (LBFGS's line search)
        if isinstance(module, LOSS_MODULES):
            return  # a loss (even one the model holds) begins no step
        training = module.training and torch.is_grad_enabled()
        hook = self.hook
        if hook is not None and module in hook._module_names:
            hook.forward_start(hook.model_of(module), args, training)
        elif not training or not _has_trainable_parameters(module):
            return
        else:
            hook = self._start()
            if hook is None:
                return
            hook.forward_start(hook.adopt(module), args, training)
        self._watch_directly(module)
        if hook._open is not None and hook._open.saving:
            self._set_module_hooks(True)  # this step saves: its modules' inputs and outputs, a model new since

    def _forward_post(self, module: nn.Module, args: Any, output: Any) -> None:
        if torch.compiler.is_compiling():
            return  # in a compiled graph (see _forward_pre)
        local = self._local
        if getattr(local, "outer", None) is module:
            local.outer = None
        if self._forked:
            return
        hook = self.hook
        if isinstance(module, LOSS_MODULES):
            self._watch_directly(module)
            if isinstance(output, torch.Tensor):
                name = f"{type(module).__name__}_output_0"
                if torch.is_grad_enabled():
                    self._loss_output, self._loss_output_name = weakref.ref(output), name
                if hook is not None:
                    hook.evaluation_loss(output, name)
                    hook.note_loss_inputs(args, type(module).__name__)
            return
        if hook is not None and hook._capture_io and module in hook._module_names and module not in hook._wrapped:
            hook._on_module_output(module, args, output)

    # ------------------------------------------------------------------ backward

    def _before_backward(self, args: tuple, kwargs: dict) -> bool:
        """Note the loss; True for a backward the script called (not one run inside another's, as reentrant
        activation checkpointing does)."""
        if self._forked or torch._C._current_graph_task_id() != -1:
            return False
        self._local.outer = None
        hook = self._start()
        if hook is None:
            return False
        if self._backward_since_check and not self._optimizer_seen and self._versions != self._parameter_versions():
            self._refuse(*self_updating_refusal(keras_on_the_stack()))
        tensors = args[0] if args else kwargs.get("tensors")
        gradients = args[1] if len(args) > 1 else kwargs.get("grad_tensors", kwargs.get("grad_variables"))
        loss = _single_tensor(tensors)
        if loss is not None and gradients is None and loss.numel() == 1:
            self._note_loss(loss)
        return True

    def _note_loss(self, loss: torch.Tensor) -> None:
        scaled, self._scaled = self._scaled, None
        if scaled is not None and scaled[0]() is loss:
            loss = scaled[1]  # AMP: the loss before GradScaler multiplied it by its scale
        output = self._loss_output() if self._loss_output is not None else None
        self._loss_name = self._loss_output_name if output is not None and output is loss else FUNCTIONAL_LOSS_NAME
        self._losses.append(loss.detach())

    def _after_backward(self) -> None:
        self._backward_since_check = True
        if not self._optimizer_seen and self.hook is not None:
            self._versions = self._parameter_versions()
        stepping = self._stepping_without_backward
        if stepping is not None and not self._checked_in_closure:
            # optimizer.step(closure) (LBFGS, PyTorch Lightning): the closure's backward, before the update
            self._checked_in_closure = True
            self._check(stepping)

    def _parameter_versions(self) -> list[int]:
        return [parameter._version for _, parameter in self.hook._parameters] if self.hook is not None else []

    # ------------------------------------------------------------------ optimizer steps

    def _before_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._forked:
            return
        self._local.outer = None
        self._optimizer_seen = True
        # the hook's args are step()'s own, the optimizer first: optimizer.step(closure) or step(closure=...)
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if not self._backward_since_check or callable(closure):
            # another optimizer of a step already checked, or one whose closure runs backward inside step(): then the
            # step is checked at the closure's backward, whose gradients and loss join the micro-batches' before it
            # (PyTorch Lightning runs the last micro-batch of an accumulated step in optimizer.step's closure)
            self._stepping_without_backward, self._checked_in_closure = optimizer, False
            return
        self._check(optimizer)

    def _after_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        if self._stepping_without_backward is optimizer:
            self._stepping_without_backward = None
            if not self._checked_in_closure and self._backward_since_check:
                # a closure that ran no backward of its own: the step's micro-batches are checked now, late but counted
                self._check(optimizer)
            elif self._checked_in_closure:
                # the closure evaluated again (LBFGS's line search): the step was judged on its first evaluation
                self._losses, self._backward_since_check = [], False

    def _check(self, optimizer: torch.optim.Optimizer | None, judge_gradients: bool = True) -> None:
        """The step's check (the hook's ``end_step``): StopTrainingRequested when a rule stops training."""
        hook = self.hook
        if hook is None:
            return
        if optimizer is not None:
            self._note_checker(optimizer)
            hook.watch_optimizer(optimizer)
        losses, self._losses = self._losses, []
        self._backward_since_check = False
        if hook._open is not None and hook._open.mode is ModeKeys.EVAL:
            hook._close_open_step()  # an evaluation forward came after this step's (functional) forward
        hook.mode = ModeKeys.TRAIN
        if losses:
            hook._loss_name = self._loss_name
            hook._pending_loss = losses[0] if len(losses) == 1 else torch.stack([loss.reshape(()) for loss in losses]).sum()
        hook.end_step(judge_gradients=judge_gradients)
        if hook._tops:
            self._set_module_hooks(False)  # the models are found: their own hooks watch them until a step saves

    def _note_checker(self, optimizer: torch.optim.Optimizer) -> None:
        """Optimizers that take turns, each after its own backward: refused (one phase after another is fine)."""
        checkers = self._checkers
        if checkers and checkers[-1] is optimizer:
            return
        if any(earlier is optimizer for earlier in checkers):
            self._refuse(
                f"the script steps {len(checkers)} optimizers ({_describe_optimizers(checkers)}) in turn, each after "
                "a backward() of its own (as a GAN trains its generator and discriminator): one series of steps "
                "would mix their losses and gradients"
            )
        checkers.append(optimizer)

    def _after_fork_in_child(self) -> None:
        self._forked = True  # a data-loading worker: the parent process watches training


_WATCHER: TorchWatcher | None = None


def _after_fork_in_child() -> None:
    if _WATCHER is not None:
        _WATCHER._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def install() -> TorchWatcher:
    """The job's zero-change watcher (one per process), installed."""
    global _WATCHER
    if _WATCHER is None:
        _WATCHER = TorchWatcher()
        _WATCHER.install()
    return _WATCHER


def current() -> TorchWatcher | None:
    return _WATCHER
