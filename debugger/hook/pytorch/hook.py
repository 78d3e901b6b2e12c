"""The training-side hook: records tensors, evaluates rules in the job, writes the rule-status document.

Adoption in a user's script (3 lines)::

    hook = Hook.from_configs(hook_config=hook_json, rule_configs=rules_json, out_dir=debug_dir, job_name=job)
    hook.register_module(model)
    hook.register_loss(criterion)

It also carries smdebug's hook semantics (``smdebug.pytorch.Hook`` is this class in the "smdebug" profile):
collections defined by name patterns, save configurations per mode (``set_mode``), reductions,
``save_scalar`` / ``save_tensor``. The two profiles differ only in tensor names (smdebug prefixes
parameters with the model's class name: ``Net_fc1.weight``), in the collections saved by default (ours:
gradients, weights, biases, losses, metrics, learning_rate; smdebug's: losses), in what begins a step
(see :mod:`debugger.hook.pytorch.step_capture`) and in whether the every-step signals are tensors.

Saved steps are written by a background thread (:mod:`debugger.storage.step_writer`); the check of a step runs
before the optimizer can use its gradients, and a rule with a StopTraining action raises
:class:`StopTrainingRequested` there, after everything recorded so far is on disk.
"""

from __future__ import annotations

import gc
import logging
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from contracts import ContractError
from contracts.rule_status import PHASES
from debugger.core.collection import (
    ACTIVATIONS,
    GRADIENTS,
    LEARNING_RATE,
    LOSSES,
    METRICS,
    PYTORCH_COLLECTION_PATTERNS,
    CollectionManager,
)
from debugger.core.config import HookSettings, RuleSpec, parse_hook_config, parse_rule_configs
from debugger.core.modes import ModeKeys
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import SaveConfig
from debugger.hook.container_config import (  # noqa: F401 - importable from here as before
    DEFAULT_OUT_DIR,
    OUT_DIR_ENV,
    job_name_or_default,
    output_directory,
    read_container_hook_config,
    rule_configs_from_environment,
    staging_directory_for,
)
from debugger.hook.distributed import StopExchange, WorkerRole
from debugger.hook.hook_base import (
    HookBase,
    announce_hook_creation,
    apply_collection_spec,
    close_open_hooks,
    included_collections,
)
from debugger.hook.pytorch.model_structure import StructureTrace, frozen_reason
from debugger.hook.pytorch.optimizer_steps import OptimizerSteps
from debugger.hook.pytorch.script_api import ScriptApi
from debugger.hook.pytorch.spot_resume import SpotResume
from debugger.hook.pytorch.step_capture import NATIVE, SMDEBUG, StepCapture
from debugger.hook.pytorch.step_signals import StepSignals
from debugger.hook.stall_watchdog import StallWatchdog
from debugger.hook.stop_training import StopTrainingRequested
from debugger.rules.rule import TOTAL_GRADIENT_NORM
from debugger.rules.tensor_signal import parameter_tensor_names
from debugger.storage import layout
from debugger.storage.s3_mirror import mirroring_enabled
from debugger.storage.tensorboard_events import TensorBoardEvents
from debugger.trial.live_trial import LiveTrial

LOGGER = logging.getLogger("debugger.hook")
LEARNING_RATE_TENSOR = LEARNING_RATE
#: Collections our own profile saves when the configuration names none (activations are opt-in).
DEFAULT_COLLECTIONS = (GRADIENTS, "weights", "biases", LOSSES, METRICS, LEARNING_RATE)
#: smdebug's PyTorch hook saves losses whatever the configuration.
SMDEBUG_ALWAYS_SAVED = (LOSSES,)
ACTIVATION_TYPES = (
    nn.ELU, nn.ReLU, nn.LeakyReLU, nn.SELU, nn.GELU, nn.Sigmoid, nn.Tanh, nn.Softplus, nn.SiLU, nn.PReLU,
    nn.ReLU6, nn.CELU, nn.Mish,
)  # fmt: skip


class Hook(ScriptApi, StepCapture, SpotResume, HookBase):
    """Create with :meth:`from_configs` (or :meth:`create_from_json_file`); see the module docstring."""

    def __init__(
        self,
        settings: HookSettings,
        rule_specs: list[RuleSpec],
        out_dir: str | Path,
        job_name: str,
        source_dir: str | Path | None = None,
        status_heartbeat_seconds: float = 60.0,
        profile: str = NATIVE,
        s3_output_path: str | None = None,
        include_collections: list[str] | None = None,
    ):
        if profile not in (NATIVE, SMDEBUG):
            raise ValueError(f"profile must be {NATIVE!r} or {SMDEBUG!r}; got {profile!r}")
        announce_hook_creation(self)  # a hook of the script's own: the zero-change hook stands aside
        self.profile = profile
        self.settings = settings
        #: Under torch.distributed: this process's rank; the chief writes the job's output, the others their own.
        self.worker_role = WorkerRole.of_this_process()
        self._stop_exchange = StopExchange(self.worker_role)
        self.out_dir = self.worker_role.output_dir(Path(out_dir))
        self.job_name = job_name
        self.dry_run = settings.dry_run or not self.worker_role.records(settings.include_workers)
        self.include_workers = settings.include_workers
        self.save_config: SaveConfig = settings.save_config
        self.reduction_config: ReductionConfig | None = settings.reduction_config
        self._setup_collections(settings, include_collections)
        self._extra_save_steps: dict[str, set[int]] = {}
        #: collection -> (every, until): also saved every that many training steps, up to that step (None: all job)
        self._extra_save_every: dict[str, set[tuple[int, int | None]]] = {}
        self.trial = LiveTrial(self.out_dir, expose_signals=profile == NATIVE, flush=self._flush_writer)
        self.trial.collection_definitions = self.collection_manager.collections
        self.trial.worker = self.worker_role.worker  # a rule in the job reads this rank's tensors
        self._stall_watchdog: StallWatchdog | None = None
        for requirement in self._load_rules(rule_specs, source_dir):
            self._require(
                requirement.collection, requirement.steps, requirement.include_regex, requirement.every, requirement.until
            )
        self._start_status(status_heartbeat_seconds)

        self.mode = ModeKeys.GLOBAL
        self._next_step = 0
        self._next_mode_step: dict[ModeKeys, int] = {}
        self._open = None
        self._capture_io = False
        self._prepared_version = None
        self._effective_save: dict[str, SaveConfig] = {}
        self._effective_reduction: dict[str, ReductionConfig | None] = {}
        self._io_collections: set[str] = set()
        self._membership_cache: dict[str, tuple[str, ...]] = {}
        self._pending_scalars: list[tuple[str, Any]] = []
        self._pending_custom: dict[str, tuple[Any, list[str]]] = {}
        self.last_loss: float | None = None
        self.last_gradient_norm: float | None = None
        self._epoch: int | None = None
        self._context_learning_rate: float | None = None
        self._parameters: list[tuple[str, nn.Parameter]] = []
        self._parameter_names: dict[int, str] = {}
        #: one per watched model, each off after its model's first training forward pass
        self._structures: list[StructureTrace] = []
        #: Parameters that take no gradient (a frozen, pretrained part): saved as weights and biases, as smdebug does,
        #: in the smdebug profile; never part of the gradient checks
        self._frozen_parameters: list[tuple[str, nn.Parameter]] = []
        self._module_names: dict[nn.Module, str] = {}
        self._top_module: nn.Module | None = None
        #: The top module's dropout modules, found once per top module (contracts.rule_status.Evidence.training_dropout)
        self._dropout_modules: tuple[nn.Module | None, list[nn.Module]] = (None, [])
        self._handles: list[Any] = []
        self._io_children: list[nn.Module] = []
        self._io_handles: list[Any] = []
        self._grad_handles: list[Any] = []
        self._loss_name = "loss_output_0"
        self._pending_loss: torch.Tensor | None = None
        #: what the step under way gathers on the device for its check (label tallies, input fingerprints)
        self._signals = StepSignals()
        self._optimizer: torch.optim.Optimizer | None = None
        #: The optimizer seen stepping this model's parameters (evidence only: the checks stay where they are).
        self._observed_optimizer: torch.optim.Optimizer | None = None
        self._parameter_ids: frozenset[int] = frozenset()
        self._optimizer_searched = False
        self._callback_queued = False
        self._nonfinite_saved = False

        destination = self.worker_role.s3_output_path(s3_output_path or settings.s3_output_path)
        mirrored = destination and not self.dry_run and (s3_output_path or mirroring_enabled(destination))
        self._start_output(destination if mirrored else None)
        self.tensorboard = None if self.dry_run else TensorBoardEvents.for_hook(
            settings.export_tensorboard, settings.tensorboard_dir, self.out_dir
        )
        self._resume_interrupted_run()
        # the optimizer step of each global step, which the messages name (contracts.step_names)
        self.trial.step_numbering = OptimizerSteps(self)
        self.trial.step_numbering.resume(self._next_mode_step, self._resumed_step_counts)
        self._handles.extend(self.trial.step_numbering.handles)
        self._watch_checkpoints()
        self._opened()
        self._stall_watchdog = StallWatchdog.for_hook(self)  # StalledTrainingRule's clock starts now

    def _setup_collections(self, settings: HookSettings, include_collections: list[str] | None) -> None:
        patterns = dict(PYTORCH_COLLECTION_PATTERNS)
        if self.profile == NATIVE:
            patterns.update({METRICS: [], LEARNING_RATE: [], ACTIVATIONS: []})
        self._builtin_patterns = {name: list(value) for name, value in patterns.items()}
        self._builtin_names = frozenset(patterns)
        self.collection_manager = CollectionManager(patterns)
        if self.profile == NATIVE:
            self.collection_manager.get(GRADIENTS).add_tensor_name(TOTAL_GRADIENT_NORM)
            self.collection_manager.get(LEARNING_RATE).add_tensor_name(LEARNING_RATE_TENSOR)
        self._config_where: dict[str, str] = {}
        for spec in settings.collection_specs or ():
            collection = apply_collection_spec(self.collection_manager, spec)
            if spec.reduction_config is not None:
                collection.reduction_config = spec.reduction_config
            if spec.save_histogram is not None:
                collection.save_histogram = spec.save_histogram
            self._config_where[spec.name] = spec.where
            if spec.name not in self._builtin_names and not spec.include_regex:
                self._raise_unconfigured(spec.name)
        self.include_collections = included_collections(
            self.collection_manager,
            settings,
            include_collections,
            DEFAULT_COLLECTIONS if self.profile == NATIVE else (),
            SMDEBUG_ALWAYS_SAVED if self.profile == SMDEBUG else (),
        )

    def _raise_unconfigured(self, name: str) -> None:
        where = self._config_where.get(name)
        if where is not None:
            raise ContractError(
                f"{where}.CollectionName",
                f"{name!r} is not a built-in collection ({', '.join(sorted(self._builtin_names))}); "
                "a collection of your own needs CollectionParameters.include_regex",
            )
        from debugger.core.exceptions import InvalidCollectionConfiguration

        raise InvalidCollectionConfiguration(name)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_configs(
        cls,
        hook_config: dict | str | None = None,
        rule_configs: list | str | None = None,
        out_dir: str | Path | None = None,
        job_name: str | None = None,
        source_dir: str | Path | None = None,
        profile: str = NATIVE,
    ) -> Hook:
        """Build from DebugHookConfig / DebugRuleConfigurations (dicts or JSON text). Raises ContractError.

        Output directory: ``out_dir`` if given, else env DEBUG_OUTPUT_DIR, else the config's LocalPath, else
        /opt/ml/output/tensors. Relative ``custom_rule_source`` paths resolve under ``source_dir`` (default cwd).
        """
        settings = parse_hook_config(hook_config)
        specs = parse_rule_configs(rule_configs)
        directory = output_directory(settings.out_dir_from_config, out_dir)
        return cls(settings, specs, directory, job_name_or_default(job_name), source_dir=source_dir, profile=profile)

    @classmethod
    def create_from_json_file(cls, json_config_path: str | Path | None = None, source_dir: str | Path | None = None, profile: str = NATIVE) -> Hook:
        """smdebug's entry: the hook configuration from the JSON file SageMaker writes into the container.

        The path: ``json_config_path``, else env SMDEBUG_CONFIG_FILE_PATH, else
        /opt/ml/input/config/debughookconfig.json. The file may spell values as SageMaker and smdebug do
        (numbers, booleans, ``S3Path``). The rules (our extension: they run in the job) come from the
        DebugRuleConfigurations JSON file named by env DEBUGGER_RULE_CONFIG_FILE_PATH, if set.
        """
        config = read_container_hook_config(json_config_path)
        return cls.from_configs(hook_config=config, rule_configs=rule_configs_from_environment(), source_dir=source_dir, profile=profile)

    def _require(
        self, collection: str, steps: frozenset[int] | None, include_regex: tuple = (), every: int | None = None,
        until: int | None = None,
    ) -> None:
        """Save what a configured rule reads, as SageMaker adds a built-in rule's collections to the hook config."""
        if every:
            self._extra_save_every.setdefault(collection, set()).add((every, until))
        target = self.collection_manager.get(collection)
        if include_regex:
            target.include([pattern.pattern if hasattr(pattern, "pattern") else pattern for pattern in include_regex])
        if collection not in self.include_collections:
            self.include_collections.append(collection)
            if steps:  # saved only where the rule looks
                target.save_config = SaveConfig(end_step=0, save_steps=sorted(steps))
        elif steps:
            self._extra_save_steps.setdefault(collection, set()).update(steps)

    # ------------------------------------------------------------------ registration (the public API)

    def register_module(self, module: nn.Module) -> None:
        """Watch ``module``: its parameters (weights, biases, gradients) and the inputs/outputs of its modules."""
        if not isinstance(module, nn.Module):
            raise TypeError(f"register_module takes a torch.nn.Module; got {type(module).__name__}")
        prefix = f"{module._get_name()}_" if self.profile == SMDEBUG else ""
        named = [(prefix + name, parameter) for name, parameter in module.named_parameters()]
        self._parameters = [(name, parameter) for name, parameter in named if parameter.requires_grad]
        if self.profile == SMDEBUG:
            self._frozen_parameters = [(name, parameter) for name, parameter in named if not parameter.requires_grad]
        elif not self._parameters:
            raise ValueError("register_module: the module has no trainable parameters to watch")
        self._top_module = module
        for structure in self._structures:
            structure.remove()
        self._structures, self._parameter_names = [], {}
        self._watch_structure(module, prefix)
        self._name_modules(module)
        # its submodules' outputs matter only at steps that capture module inputs and outputs: hooked for those
        self._io_children += [child for child in module.modules() if child is not module]
        self._handles.append(module.register_forward_pre_hook(self._on_forward_start))
        self._handles.append(module.register_forward_hook(self._on_module_output))
        self._parameter_ids = frozenset(id(parameter) for _, parameter in self._parameters)
        self._handles.append(register_optimizer_step_pre_hook(self._observe_optimizer))
        if self._optimizer is None:
            self._watch_backward()

    register_hook = register_module  # smdebug's other name for it

    def _watch_module_io(self, on: bool) -> None:
        """Forward hooks on the registered models' submodules only while steps capture their inputs and outputs: in
        between, each would be a Python call per module call and put every module call on nn.Module's slow path."""
        if on == bool(self._io_handles) or not self._io_children:
            return
        if on:
            self._io_handles = [child.register_forward_hook(self._on_module_output) for child in self._io_children]
            return
        for handle in self._io_handles:
            handle.remove()
        self._io_handles = []

    def _name_modules(self, module: nn.Module, prefix: str = "") -> None:
        """Name ``module`` (its class name) and its submodules (their paths, after ``prefix``) for the tensors of
        their inputs and outputs; activation modules join the ``activations`` collection."""
        for name, child in module.named_modules():
            if child is module:
                self._module_names[child] = module._get_name()
                continue
            name = prefix + name
            self._module_names[child] = name
            if self.profile == NATIVE and isinstance(child, ACTIVATION_TYPES):
                self.collection_manager.get(ACTIVATIONS).include([f"^{name}_input_0$", f"^{name}_output_0$"])
                # DeadRelu / SaturatedActivation find nn.ReLU / nn.Tanh modules by type, whatever their names
                self.trial.activation_kinds[name] = type(child).__name__

    def register_loss(self, criterion: nn.Module) -> None:
        """Record ``criterion``'s output every step (collection "losses": ``<LossClass>_output_0``)."""
        if not isinstance(criterion, nn.Module):
            raise TypeError(
                "register_loss expects an nn.Module loss such as nn.CrossEntropyLoss(); call record_loss(tensor) otherwise"
            )
        self._loss_name = f"{type(criterion).__name__}_output_0"
        self._module_names[criterion] = type(criterion).__name__
        self._handles.append(criterion.register_forward_hook(self._on_loss))

    def record_loss(self, loss: torch.Tensor, name: str = "loss_output_0") -> None:
        """For a functional loss: pass the step's loss tensor before backward()."""
        self._loss_name = name
        self._pending_loss = loss.detach()

    def register_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Run the step's checks in ``optimizer.step``'s pre-hook and record its learning rate."""
        self._optimizer = optimizer
        self._handles.append(optimizer.register_step_pre_hook(self._on_optimizer_step))
        for handle in self._grad_handles:
            handle.remove()
        self._grad_handles = []

    def _watch_structure(
        self, model: nn.Module, prefix: str, forward_under_way: bool = False, trace_forward: bool = True
    ) -> None:
        """What of ``model`` cannot carry a training signal, for the rules to skip (debugger.rules.tensor_signal): frozen
        parameters now, biases a normalization removes once its first training forward pass shows the wiring (the
        one under way, when the model is adopted as its forward begins; not for a compiled model, whose graph runs
        no module hooks: ``trace_forward=False``)."""
        named = [(prefix + name, parameter) for name, parameter in model.named_parameters()]
        self._parameter_names.update({id(parameter): name for name, parameter in named if id(parameter) not in self._parameter_names})
        self._note_silent({name: frozen_reason() for name, parameter in named if not parameter.requires_grad})
        if not trace_forward:
            return
        trace = StructureTrace(model, self._on_silent_parameter)
        if forward_under_way and model.training:
            trace.begin()
        self._structures.append(trace)

    def _on_silent_parameter(self, parameter: nn.Parameter, kind: str, reason: str) -> None:
        name = self._parameter_names.get(id(parameter))
        if name is not None:
            self._note_silent({name: reason})

    def _note_silent(self, parameters: dict[str, str]) -> None:
        """Parameters that cannot carry a training signal (name -> why): their value and gradient tensors are
        skipped by the rules that judge them, on the live trial and on the saved one."""
        added = {}
        for name, reason in parameters.items():
            for tensor in parameter_tensor_names(name):
                if tensor not in self.trial.silent_tensors:
                    added[tensor] = reason
        if not added:
            return
        self.trial.silent_tensors.update(added)
        if not self.dry_run:
            layout.write_silent_tensors(self.out_dir, self.trial.silent_tensors)

    def _observe_optimizer(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """Every optimizer's step (torch's global pre-hook): remember the one updating this model, so the evidence
        names it and its rates although smdebug's scripts never register it."""
        if self._observed_optimizer is None and self._updates_this_model(optimizer):
            self._observed_optimizer = optimizer

    def _updates_this_model(self, optimizer: Any) -> bool:
        return any(
            id(parameter) in self._parameter_ids for group in optimizer.param_groups for parameter in group["params"]
        )

    def _optimizer_in_use(self) -> torch.optim.Optimizer | None:
        """The registered optimizer, else the one seen stepping this model; when a rule fired before the first
        optimizer step, the one holding this model's first parameter, found once by following what refers to it
        (its parameter group's list, the group, the optimizer's param_groups: about 0.7 s among a ResNet job's
        280,000 objects, paid once by a job that is stopping)."""
        optimizer = self._optimizer or self._observed_optimizer
        if optimizer is None and self.evidence.first_issue_step is not None and not self._optimizer_searched:
            self._optimizer_searched = True
            self._observed_optimizer = optimizer = _optimizer_holding(self._parameters[0][1]) if self._parameters else None
        return optimizer

    def _watch_backward(self) -> None:
        for _, parameter in self._parameters:
            self._grad_handles.append(parameter.register_post_accumulate_grad_hook(self._on_gradient))

    def set_context(self, epoch: int | None = None, phase: str | None = None, steps_per_epoch: int | None = None, learning_rate: float | None = None) -> None:
        """Evidence for the planner: the current epoch, phase (warmup/main), steps per epoch (optimizer steps, as
        messages count steps: with gradient accumulation, batches / accumulation; a number given in batches is read
        as such when the job's counts show it, contracts.epoch_length) and learning rate."""
        if phase is not None:
            if phase not in PHASES:
                raise ValueError(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")
            self._phase = phase
        if epoch is not None:
            numbering = getattr(self.trial, "step_numbering", None)
            if numbering is not None and self._epoch is not None and epoch != self._epoch:
                numbering.next_epoch()  # the epoch the script named before is complete
            self._epoch = epoch
        if steps_per_epoch is not None:
            self.evidence.steps_per_epoch_stated = self.evidence.steps_per_epoch = int(steps_per_epoch)
        if learning_rate is not None:
            self._context_learning_rate = float(learning_rate)

    # ------------------------------------------------------------------ ending

    def _release(self) -> None:
        """At close: the stall watchdog stops, the open step is checked and handed over, torch hooks removed."""
        if self._stall_watchdog is not None:
            self._stall_watchdog.stop()
        if self._checkpoint_watch is not None:
            self._checkpoint_watch.stop()
        try:
            self._close_open_step()
        except StopTrainingRequested:
            pass  # already recorded in the status document
        for handle in [*self._handles, *self._grad_handles, *self._io_handles]:
            handle.remove()
        for structure in self._structures:
            structure.remove()
        if self.tensorboard is not None:
            self.tensorboard.close()



def _optimizer_holding(parameter: torch.Tensor) -> torch.optim.Optimizer | None:
    """The optimizer whose parameter groups hold ``parameter``: parameter <- group["params"] <- group <-
    optimizer.param_groups <- the optimizer (or its __dict__)."""
    for params in gc.get_referrers(parameter):
        if not isinstance(params, list):
            continue
        for group in gc.get_referrers(params):
            if not isinstance(group, dict) or group.get("params") is not params:
                continue
            for groups in gc.get_referrers(group):
                if not isinstance(groups, list):
                    continue
                for owner in gc.get_referrers(groups):
                    if isinstance(owner, dict) and owner.get("param_groups") is groups:
                        owner = next((item for item in gc.get_referrers(owner) if isinstance(item, torch.optim.Optimizer)), owner)
                    if isinstance(owner, torch.optim.Optimizer) and owner.param_groups is groups:
                        return owner
    return None

__all__ = ["Hook", "StopTrainingRequested", "ContractError", "close_open_hooks"]
