"""The training-side hook: records tensors, evaluates rules in the job, writes the rule-status document.

Adoption in a user's script (3 lines)::

    hook = Hook.from_configs(hook_config=hook_json, rule_configs=rules_json, out_dir=debug_dir, job_name=job)
    hook.register_module(model)
    hook.register_loss(criterion)

Per step the hook computes the cheap scalars (loss value, total gradient
norm, learning rate) and runs every rule on them; full tensors are copied
and written only on saved steps (per collection save configuration). The
check of a step runs before the optimizer can use its gradients: in
``optimizer.step``'s pre-hook when ``register_optimizer`` was called, else at
the end of ``loss.backward()`` (autograd's end-of-backward callback). A
rule with a StopTraining action raises :class:`StopTrainingRequested` there,
so the weights never see the step's gradients.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import math
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from contracts import ContractError
from contracts.job import (
    DEFAULT_HOOK_CONFIG_FILE,
    HOOK_CONFIG_FILE_ENV,
    RULE_CONFIGS_FILE_ENV,
)
from contracts.rule_status import (
    ERROR,
    IN_PROGRESS,
    ISSUES_FOUND,
    MAX_REPORTED_METRICS,
    NO_ISSUES_FOUND,
    PHASES,
    RULE_STATUS_FILE,
    ActionRecord,
    Evidence,
    MetricValue,
    RuleIssue,
    RuleStatus,
    RuleStatusDocument,
)
from debugger import storage
from debugger.config import (
    CollectionSettings,
    HookSettings,
    RuleSpec,
    SaveConfig,
    parse_hook_config,
    parse_rule_configs,
)
from debugger.rules import GRADIENT_PREFIX, TOTAL_GRADIENT_NORM, Rule, build_rule
from debugger.s3_mirror import S3Mirror, mirroring_enabled
from debugger.stop_training import StopTrainingRequested
from debugger.trial import LiveTrial, TensorNotAvailable

DEFAULT_OUT_DIR = "/opt/ml/output/tensors"
OUT_DIR_ENV = "DEBUG_OUTPUT_DIR"
LEARNING_RATE = "learning_rate"
ACTIVATION_TYPES = (
    nn.ELU,
    nn.ReLU,
    nn.LeakyReLU,
    nn.SELU,
    nn.GELU,
    nn.Sigmoid,
    nn.Tanh,
    nn.Softplus,
    nn.SiLU,
    nn.PReLU,
    nn.ReLU6,
    nn.CELU,
    nn.Mish,
)
LOGGER = logging.getLogger(__name__)


def _read_json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no {what} at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ContractError(str(path), f"the {what} must be a JSON file: {error}") from None


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclasses.dataclass
class _RuleState:
    spec: RuleSpec
    rule: Rule
    status: str = IN_PROGRESS
    details: str = ""
    modified: str = ""
    issue: RuleIssue | None = None


class Hook:
    """Create with :meth:`from_configs`; see the module docstring."""

    def __init__(
        self,
        settings: HookSettings,
        rule_specs: list[RuleSpec],
        out_dir: str | Path,
        job_name: str,
        source_dir: str | Path | None = None,
        status_heartbeat_seconds: float = 60.0,
    ):
        self.settings = settings
        self.out_dir = Path(out_dir)
        self.job_name = job_name
        self.collections: dict[str, CollectionSettings] = dict(settings.collections)
        self._extra_save_steps: dict[str, set[int]] = {}
        self.trial = LiveTrial(self.out_dir)
        self._rules = [_RuleState(spec, build_rule(spec, self.trial, source_dir)) for spec in rule_specs]
        for state in self._rules:
            for requirement in state.rule.requirements():
                self._require(requirement.collection, requirement.steps, requirement.include_regex)

        self.step = 0
        self.last_loss: float | None = None
        self.last_gradient_norm: float | None = None
        self.evidence = Evidence()
        self.actions: list[ActionRecord] = []
        self.metrics: dict[str, MetricValue] = {}
        self._epoch: int | None = None
        self._phase: str | None = None
        self._context_learning_rate: float | None = None
        self._parameters: list[tuple[str, nn.Parameter]] = []
        self._handles: list[Any] = []
        self._grad_handles: list[Any] = []
        self._loss_name: str | None = None
        self._pending_loss: torch.Tensor | None = None
        self._optimizer: torch.optim.Optimizer | None = None
        self._callback_queued = False
        self._activation_modules: dict[nn.Module, str] = {}
        self._capturing_activations = False
        self._activations: dict[str, np.ndarray] = {}
        self._nonfinite_saved = False
        self._initial_recorded = False
        self._stop: StopTrainingRequested | None = None
        self._closed = False
        self._heartbeat = status_heartbeat_seconds
        self._last_status_write = 0.0

        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.mirror = (
            S3Mirror(self.out_dir, settings.s3_output_path) if mirroring_enabled(settings.s3_output_path) else None
        )
        self.write_status()
        _OPEN_HOOKS.append(self)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_configs(
        cls,
        hook_config: dict | str | None = None,
        rule_configs: list | str | None = None,
        out_dir: str | Path | None = None,
        job_name: str | None = None,
        source_dir: str | Path | None = None,
    ) -> Hook:
        """Build from DebugHookConfig / DebugRuleConfigurations (dicts or JSON text). Raises ContractError.

        Output directory: ``out_dir`` if given, else env DEBUG_OUTPUT_DIR, else the config's LocalPath, else
        /opt/ml/output/tensors. Relative ``custom_rule_source`` paths resolve under ``source_dir`` (default cwd).
        """
        settings = parse_hook_config(hook_config)
        specs = parse_rule_configs(rule_configs)
        directory = out_dir or os.environ.get(OUT_DIR_ENV) or settings.out_dir_from_config or DEFAULT_OUT_DIR
        name = job_name or os.environ.get("TRAINING_JOB_NAME") or "local-job"
        return cls(settings, specs, directory, name, source_dir=source_dir)

    @classmethod
    def create_from_json_file(cls, json_config_path: str | Path | None = None, source_dir: str | Path | None = None) -> Hook:
        """smdebug's entry: the hook configuration from the JSON file SageMaker writes into the container.

        The path: ``json_config_path``, else env SMDEBUG_CONFIG_FILE_PATH, else
        /opt/ml/input/config/debughookconfig.json. The rules (our extension: they run in the job) come
        from the DebugRuleConfigurations JSON file named by env DEBUGGER_RULE_CONFIG_FILE_PATH, if set.
        The job launcher writes both files.
        """
        path = Path(json_config_path or os.environ.get(HOOK_CONFIG_FILE_ENV) or DEFAULT_HOOK_CONFIG_FILE)
        config = _read_json_file(path, f"hook configuration (env {HOOK_CONFIG_FILE_ENV})")
        if isinstance(config, dict) and "S3Path" in config:  # the container file's name for DebugHookConfig.S3OutputPath
            config = {("S3OutputPath" if key == "S3Path" else key): value for key, value in config.items()}
        rules_path = os.environ.get(RULE_CONFIGS_FILE_ENV)
        rule_configs = _read_json_file(Path(rules_path), f"rule configurations (env {RULE_CONFIGS_FILE_ENV})") if rules_path else None
        return cls.from_configs(hook_config=config, rule_configs=rule_configs, source_dir=source_dir)

    def _require(self, collection: str, steps: frozenset[int] | None, include_regex: tuple = ()) -> None:
        """Save what a configured rule reads, as SageMaker adds a built-in rule's collections to the hook config."""
        if collection not in self.collections:
            save = SaveConfig(save_steps=steps) if steps else self.settings.default_save
            self.collections[collection] = CollectionSettings(collection, save, include_regex)
        elif steps:
            self._extra_save_steps.setdefault(collection, set()).update(steps)

    # ------------------------------------------------------------------ registration (the public API)

    def register_module(self, module: nn.Module) -> None:
        """Watch ``module``'s parameters (weights, biases, gradients) and, if configured, its activations."""
        self._parameters = [
            (name, parameter) for name, parameter in module.named_parameters() if parameter.requires_grad
        ]
        if not self._parameters:
            raise ValueError("register_module: the module has no trainable parameters to watch")
        self._handles.append(module.register_forward_pre_hook(self._on_forward_start))
        if self._optimizer is None:
            self._watch_backward()
        if "activations" in self.collections:
            for name, child in module.named_modules():
                if isinstance(child, ACTIVATION_TYPES):
                    self._activation_modules[child] = name
                    self._handles.append(child.register_forward_hook(self._on_activation))

    def register_loss(self, criterion: nn.Module) -> None:
        """Record the value of ``criterion``'s output every step (collection "losses")."""
        if not isinstance(criterion, nn.Module):
            raise TypeError(
                "register_loss expects an nn.Module loss such as nn.CrossEntropyLoss(); call record_loss(tensor) otherwise"
            )
        self._loss_name = f"{type(criterion).__name__}_output_0"
        self._handles.append(criterion.register_forward_hook(self._on_loss))

    def record_loss(self, loss: torch.Tensor, name: str = "loss_output_0") -> None:
        """For a functional loss: pass the step's loss tensor before backward()."""
        self._loss_name = self._loss_name or name
        self._pending_loss = loss.detach()

    def register_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Run the step's checks in ``optimizer.step``'s pre-hook and record its learning rate."""
        self._optimizer = optimizer
        self._handles.append(optimizer.register_step_pre_hook(self._on_optimizer_step))
        for handle in self._grad_handles:
            handle.remove()
        self._grad_handles = []

    def set_context(
        self,
        epoch: int | None = None,
        phase: str | None = None,
        steps_per_epoch: int | None = None,
        learning_rate: float | None = None,
    ) -> None:
        """Evidence for the planner: the current epoch, phase (warmup/main), steps per epoch and learning rate."""
        if phase is not None:
            if phase not in PHASES:
                raise ValueError(f"phase must be one of {', '.join(PHASES)}; got {phase!r}")
            self._phase = phase
        if epoch is not None:
            self._epoch = epoch
        if steps_per_epoch is not None:
            self.evidence.steps_per_epoch = int(steps_per_epoch)
        if learning_rate is not None:
            self._context_learning_rate = float(learning_rate)

    def record_metric(self, name: str, value: float, step: int | None = None) -> None:
        """Record a metric (collection "metrics"); ``step`` defaults to the last completed step."""
        step = max(self.step - 1, 0) if step is None else int(step)
        self.trial.add_scalar(name, "metrics", step, float(value))
        if name in self.metrics or len(self.metrics) < MAX_REPORTED_METRICS:
            self.metrics[name] = MetricValue(value=float(value), step=step)
        collection = self.collections.get("metrics")
        if collection is not None and collection.includes(name):
            storage.append_metric(self.out_dir, name, step, float(value))

    # ------------------------------------------------------------------ torch hooks

    def _watch_backward(self) -> None:
        for _, parameter in self._parameters:
            self._grad_handles.append(parameter.register_post_accumulate_grad_hook(self._on_gradient))

    def _on_forward_start(self, module: nn.Module, inputs: Any) -> None:
        if self._stop is not None and module.training:
            raise self._stop
        self._capturing_activations = module.training and self._should_save("activations", self.step)

    def _on_activation(self, module: nn.Module, inputs: Any, output: Any) -> None:
        if not self._capturing_activations:
            return
        name = self._activation_modules[module]
        collection = self.collections["activations"]
        for suffix, value in (("_input_0", inputs[0] if inputs else None), ("_output_0", output)):
            tensor_name = name + suffix
            if isinstance(value, torch.Tensor) and collection.includes(tensor_name):
                self._activations[tensor_name] = value.detach().cpu().numpy().copy()

    def _on_loss(self, module: nn.Module, inputs: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor) and torch.is_grad_enabled():
            self._pending_loss = output.detach()

    def _on_gradient(self, parameter: torch.Tensor) -> None:
        if not self._callback_queued:
            self._callback_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._on_backward_end)

    def _on_backward_end(self) -> None:
        self._callback_queued = False
        self.end_step()

    def _on_optimizer_step(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.end_step()

    # ------------------------------------------------------------------ the per-step work

    def _should_save(self, collection: str, step: int) -> bool:
        settings = self.collections.get(collection)
        if settings is None:
            return False
        return settings.save.should_save(step) or step in self._extra_save_steps.get(collection, ())

    def _learning_rate(self) -> float | None:
        if self._optimizer is not None:
            return float(self._optimizer.param_groups[0]["lr"])
        return self._context_learning_rate

    def end_step(self) -> None:
        """Close the current step: cheap scalars, saving (on saved steps), rules. Called by the torch hooks."""
        if self._stop is not None:
            raise self._stop
        step = self.step
        gradients = [parameter.grad for _, parameter in self._parameters if parameter.grad is not None]
        # None when no parameter has a gradient (no backward this step): nothing to judge, not a vanishing gradient
        gradient_norm = float(torch.nn.utils.get_total_norm(gradients, 2.0)) if gradients else None
        loss = float(self._pending_loss.float().mean()) if self._pending_loss is not None else None
        learning_rate = self._learning_rate()
        self.last_loss, self.last_gradient_norm = loss, gradient_norm
        self._update_evidence(step, loss, gradient_norm)

        if gradient_norm is not None:
            self.trial.add_scalar(TOTAL_GRADIENT_NORM, "gradients", step, gradient_norm)
        if loss is not None:
            self.trial.add_scalar(self._loss_name, "losses", step, loss)
        if learning_rate is not None:
            self.trial.add_scalar(LEARNING_RATE, "learning_rate", step, learning_rate)

        nonfinite = (gradient_norm is not None and not math.isfinite(gradient_norm)) or (
            loss is not None and not math.isfinite(loss)
        )
        force = nonfinite and not self._nonfinite_saved
        if force:
            self._nonfinite_saved = True  # keep the first non-finite step for the post-mortem, whatever the interval
        self._save_step(step, gradient_norm, loss, learning_rate, force)

        self._pending_loss = None
        self._activations = {}
        self._capturing_activations = False
        self.step = step + 1
        self._evaluate_rules(step, learning_rate)
        if self._stop is not None:
            raise self._stop

    def _update_evidence(self, step: int, loss: float | None, gradient_norm: float | None) -> None:
        evidence = self.evidence
        if not self._initial_recorded:  # step 0, or the first step of a resumed job
            self._initial_recorded = True
            evidence.initial_loss = loss
            evidence.initial_gradient_norm = gradient_norm
        if loss is not None and math.isfinite(loss):
            evidence.last_finite_loss = loss
        if (
            gradient_norm is not None
            and math.isfinite(gradient_norm)
            and (evidence.max_gradient_norm is None or gradient_norm > evidence.max_gradient_norm)
        ):
            evidence.max_gradient_norm = gradient_norm
        evidence.last_step = step

    def _save_step(
        self, step: int, gradient_norm: float | None, loss: float | None, learning_rate: float | None, force: bool
    ) -> None:
        wanted = {name for name in self.collections if force or self._should_save(name, step)}
        if force:
            wanted.update(("gradients", "weights", "biases", "losses"))
        if not wanted:
            return
        tensors: dict[str, np.ndarray] = {}
        membership: dict[str, list[str]] = {}

        def add(name: str, collection: str, value: Any) -> None:
            settings = self.collections.get(collection)
            if settings is not None and not settings.includes(name) and not force:
                return
            tensors[name] = value
            membership[name] = [collection]

        for name, parameter in self._parameters:
            collection = "biases" if name.endswith("bias") else "weights"
            if collection in wanted:
                add(name, collection, parameter.detach().cpu().numpy().copy())
            if "gradients" in wanted and parameter.grad is not None:
                add(GRADIENT_PREFIX + name, "gradients", parameter.grad.detach().cpu().numpy().copy())
        if "gradients" in wanted and gradient_norm is not None:
            add(TOTAL_GRADIENT_NORM, "gradients", np.float64(gradient_norm))
        if "losses" in wanted and loss is not None:
            add(self._loss_name, "losses", np.float64(loss))
        if "learning_rate" in wanted and learning_rate is not None:
            add(LEARNING_RATE, "learning_rate", np.float64(learning_rate))
        if "activations" in wanted:
            for name, value in self._activations.items():
                add(name, "activations", value)
        if not tensors:
            return
        path = storage.write_step(self.out_dir, step, tensors, membership)
        self.trial.add_saved_step(step, tensors, membership)
        if self.mirror is not None:
            self.mirror.enqueue(path)

    def _evaluate_rules(self, step: int, learning_rate: float | None) -> None:
        changed = False
        for state in self._rules:
            if state.status != IN_PROGRESS:
                continue
            spec = state.spec
            if (spec.start_step is not None and step < spec.start_step) or (
                spec.end_step is not None and step >= spec.end_step
            ):
                continue
            state.rule.finding = None
            try:
                fired = bool(state.rule.invoke_at_step(step))
            except TensorNotAvailable:
                continue
            except Exception as error:  # noqa: BLE001 - a broken rule must not stop training
                state.status, state.details, state.modified = ERROR, f"{type(error).__name__}: {error}", _now()
                LOGGER.warning("rule %s raised at step %d: %s", spec.name, step, state.details)
                changed = True
                continue
            if fired:
                changed = True
                self._record_issue(state, step, learning_rate)
        if changed or time.monotonic() - self._last_status_write > self._heartbeat:
            self.write_status()

    def _record_issue(self, state: _RuleState, step: int, learning_rate: float | None) -> None:
        finding = state.rule.finding
        phase = self._phase  # None unless the script said (set_context): never guessed
        message = finding.message if finding else f"{state.spec.name} returned True"
        state.status, state.details, state.modified = ISSUES_FOUND, message, _now()
        state.issue = RuleIssue(
            step=step,
            tensor=finding.tensor if finding else "",
            value=finding.value if finding else None,
            message=message,
            phase=phase,
        )
        if self.evidence.first_issue_step is None:
            self.evidence.first_issue_step = step
            self.evidence.phase = phase
            self.evidence.learning_rate_at_issue = learning_rate
        for action in state.spec.actions:
            detail = action.get("endpoint", "") if action["name"] != "StopTraining" else message
            self.actions.append(
                ActionRecord(action=action["name"], rule=state.spec.name, step=step, at=_now(), detail=detail)
            )
            if action["name"] == "StopTraining" and self._stop is None:
                self._stop = StopTrainingRequested(state.spec.name, step, message)

    # ------------------------------------------------------------------ status document

    def status_document(self, training_ended: bool = False) -> RuleStatusDocument:
        return RuleStatusDocument(
            job_name=self.job_name,
            updated_at=_now(),
            training_ended=training_ended,
            last_step=self.step - 1,
            rules=[
                RuleStatus(
                    RuleConfigurationName=state.spec.name,
                    RuleEvaluationStatus=state.status,
                    StatusDetails=state.details,
                    LastModifiedTime=state.modified,
                    issue=state.issue,
                )
                for state in self._rules
            ],
            evidence=dataclasses.replace(self.evidence),
            actions=list(self.actions),
            metrics=dict(self.metrics),
        )

    def write_status(self, training_ended: bool = False) -> RuleStatusDocument:
        """Write rule-status.json atomically (and to S3 when mirroring)."""
        document = self.status_document(training_ended)
        text = document.to_json()
        storage.atomic_write_text(self.out_dir / RULE_STATUS_FILE, text)
        self._last_status_write = time.monotonic()
        if self.mirror is not None:
            self.mirror.put_status(text)
        return document

    def close(self, training_ended: bool = True) -> RuleStatusDocument:
        """Final status (rules still InProgress -> NoIssuesFound when training ended), end marker, S3 flush."""
        if self._closed:
            return self.status_document(training_ended)
        self._closed = True
        if self in _OPEN_HOOKS:
            _OPEN_HOOKS.remove(self)
        for handle in [*self._handles, *self._grad_handles]:
            handle.remove()
        if training_ended:
            for state in self._rules:
                if state.status == IN_PROGRESS:
                    state.status, state.details, state.modified = NO_ISSUES_FOUND, "", _now()
        document = self.write_status(training_ended=training_ended)
        extra = [self.out_dir / RULE_STATUS_FILE, self.out_dir / storage.METRICS_FILE]
        if training_ended:
            extra.append(storage.mark_training_ended(self.out_dir))
        if self.mirror is not None:
            self.mirror.close(extra)
        return document

    @property
    def rule_names(self) -> list[str]:
        """The configured rules' names (RuleConfigurationName), in order."""
        return [state.spec.name for state in self._rules]

    @property
    def stop_requested(self) -> StopTrainingRequested | None:
        return self._stop


#: Hooks created and not closed yet: closed when the process exits (or by the job launcher, which knows how
#: the script ended), so the last status document and step files are never lost.
_OPEN_HOOKS: list[Hook] = []


def close_open_hooks(training_ended: bool = True) -> None:
    for hook in list(_OPEN_HOOKS):
        try:
            hook.close(training_ended=training_ended)
        except Exception as error:  # noqa: BLE001 - closing the others matters more
            LOGGER.warning("debugger hook for %s did not close cleanly: %s", hook.job_name, error)
            if hook in _OPEN_HOOKS:
                _OPEN_HOOKS.remove(hook)


atexit.register(close_open_hooks)

__all__ = ["Hook", "StopTrainingRequested", "ContractError", "close_open_hooks"]
