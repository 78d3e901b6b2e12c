"""What the PyTorch hook (:class:`debugger.hook.pytorch.hook.Hook`) and the XGBoost callback
(:class:`debugger.hook.xgboost.hook.XGBoostHook`) share: their rules and status state, their output (step writer and
S3 mirror), closing, and the registry of hooks still open that the job launcher (or the process's exit) closes.

Imports no torch: an XGBoost job does not need it.
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Callable
from pathlib import Path

from contracts.loss_history import LossHistory
from contracts.rule_status import (
    IN_PROGRESS,
    MAX_REPORTED_METRICS,
    NO_ISSUES_FOUND,
    RULE_STATUS_FILE,
    Evidence,
    MetricValue,
    RuleStatusDocument,
)
from contracts.training_inputs import InputRepeats
from contracts.training_labels import LabelTally
from debugger.core.collection import ALL, DEFAULT, Collection, CollectionManager
from debugger.core.config import CollectionSpec, HookSettings, RuleSpec
from debugger.core.save_config import SaveConfig, SaveConfigMode
from debugger.hook.rule_runner import RuleRunner, _now, _RuleState
from debugger.hook.stop_training import StopTrainingRequested
from debugger.rules.registry import build_rule
from debugger.rules.rule import Requirement
from debugger.storage import layout
from debugger.storage.s3_mirror import S3Mirror
from debugger.storage.step_writer import StepWriter

LOGGER = logging.getLogger("debugger.hook")


def apply_collection_spec(manager: CollectionManager, spec: CollectionSpec) -> Collection:
    """A CollectionConfiguration's save configuration and include_regex, set on its collection."""
    collection = manager.get(spec.name)
    collection.save_config = SaveConfig(
        mode_save_configs={mode: SaveConfigMode(**values) for mode, values in spec.save_by_mode.items()}
    )
    if spec.include_regex:
        collection.include(list(spec.include_regex))
    return collection


def included_collections(
    manager: CollectionManager,
    settings: HookSettings,
    include: list[str] | None,
    defaults: tuple[str, ...],
    always: tuple[str, ...] = (),
) -> list[str]:
    """The collections a hook saves: ``include`` if given, else those the configuration names, else ``defaults``;
    then ``always``, and "default" / "all" when the configuration's include_regex / save_all ask for them."""
    if include is not None:
        included = list(include)
    elif settings.collection_specs is None:
        included = list(defaults)
    else:
        included = [spec.name for spec in settings.collection_specs]
    included += [name for name in always if name not in included]
    if settings.include_regex:
        manager.get(DEFAULT).include(list(settings.include_regex))
        included.append(DEFAULT)
    if settings.save_all:
        manager.get(ALL).include(".*")
        included.append(ALL)
    return list(dict.fromkeys(included))


class HookBase(RuleRunner):
    """The subclass's __init__ sets out_dir, job_name, dry_run, worker_role, mode and trial, then calls
    :meth:`_load_rules`, :meth:`_start_status` and :meth:`_start_output`, and last :meth:`_opened`."""

    def _load_rules(self, rule_specs: list[RuleSpec], source_dir: str | Path | None) -> list[Requirement]:
        """Build the configured rules over ``self.trial``; what they read, for the hook to save."""
        self._rules = [_RuleState(spec, build_rule(spec, self.trial, source_dir)) for spec in rule_specs]
        return [requirement for state in self._rules for requirement in state.rule.requirements()]

    def _start_status(self, status_heartbeat_seconds: float) -> None:
        """The state the rule-status document is written from (:class:`debugger.hook.rule_runner.RuleRunner`)."""
        self.evidence = Evidence()
        self._loss_history = LossHistory()
        self._gradient_norm_history = LossHistory()
        self._label_tally = LabelTally()
        #: Fingerprints of the training inputs (a resumed job's tally starts afresh: its inputs' bytes are not kept)
        self._input_repeats = InputRepeats()
        #: [matched, seen]: the training labels of the step under way and how many the model's top class matched.
        self._step_labels = [0, 0]
        self.actions = []
        self.metrics: dict[str, MetricValue] = {}
        #: The metrics known only from the script's printed lines (debugger.hook.printed_metrics) so far.
        self._printed_metric_names: set[str] = set()
        self._phase: str | None = None
        self._initial_recorded = False
        self._last_checked_step = -1
        self._stop: StopTrainingRequested | None = None
        self._closed = False
        self._collections_written = False
        self._heartbeat = status_heartbeat_seconds
        self._last_status_write = 0.0

    def _start_output(self, mirror_to: str | None) -> None:
        """The output directory, its S3 mirror (when ``mirror_to`` names one) and the background step writer."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.mirror = S3Mirror(self.out_dir, mirror_to) if mirror_to else None
        self._writer = StepWriter(self.out_dir, on_written=self.mirror.enqueue if self.mirror else None)

    def _opened(self) -> None:
        """The first status document (every rule InProgress), and the hook counted among those to close."""
        self.write_status()
        _OPEN_HOOKS.append(self)

    # ------------------------------------------------------------------ what scripts and rules read

    def report_printed_metric(self, name: str, value: float) -> None:
        """A value of ``name`` read from a line the script printed (at the last completed step). A metric the script
        also saves with the debugger is that one: its printed copy would count each value twice."""
        if name in self.metrics and name not in self._printed_metric_names:
            return
        self._printed_metric_names.add(name)
        self._report_metric(name, value, max(self._last_checked_step, 0), printed=True)

    def _report_metric(self, name: str, value: float, step: int, printed: bool = False) -> None:
        if not printed and name in self._printed_metric_names:
            # the script saves it too: its own values from now on, not the printed ones read so far
            self._printed_metric_names.discard(name)
            self.metrics.pop(name, None)
            getattr(self.trial, "metric_history", {}).pop(name, None)
        latest = getattr(self.trial, "latest_metrics", None)
        if latest is not None:
            latest[name] = value
        history = getattr(self.trial, "metric_history", None)
        if history is not None and value is not None and (name in history or len(history) < MAX_REPORTED_METRICS):
            history.setdefault(name, []).append(value)
        previous = self.metrics.get(name)
        if previous is not None:
            self.metrics[name] = previous.with_value(value, step, self.mode.name)
        elif len(self.metrics) < MAX_REPORTED_METRICS:
            self.metrics[name] = MetricValue(value=value, step=step, mode=self.mode.name, values=[value])

    def _flush_writer(self) -> None:
        if getattr(self, "_writer", None) is not None:  # the trial may ask before the writer exists
            self._writer.flush()

    @property
    def _writes_run_files(self) -> bool:
        """Whether this process writes the run's collections file and end marker: when it records tensors, and in a
        dry run the script asked for, as smdebug does (not on a rank that records nothing)."""
        settings = self.settings
        return not self.dry_run or (settings.dry_run and self.worker_role.records(settings.include_workers))

    def _write_collections(self) -> None:
        self._collections_written = True
        if self._writes_run_files:
            layout.write_collections(
                self.out_dir, {name: c.to_json_dict() for name, c in self.collection_manager.collections.items()}
            )

    @property
    def rule_names(self) -> list[str]:
        """The configured rules' names (RuleConfigurationName), in order."""
        return [state.spec.name for state in self._rules]

    @property
    def stop_requested(self) -> StopTrainingRequested | None:
        return self._stop

    # ------------------------------------------------------------------ ending

    def _release(self) -> None:
        """What the framework's hook lets go of before its last steps are written (nothing here)."""

    def close(self, training_ended: bool = True) -> RuleStatusDocument:
        """Last steps written, final status (rules still InProgress -> NoIssuesFound when training ended), end
        marker, S3 flush. Called by the job launcher, or at exit, when the script does not."""
        if self._closed:
            return self.status_document(training_ended)
        self._closed = True
        if self in _OPEN_HOOKS:
            _OPEN_HOOKS.remove(self)
        self._release()
        self._writer.close()
        self._write_collections()
        if training_ended:
            for state in self._rules:
                if state.status == IN_PROGRESS:
                    state.status, state.details, state.modified = NO_ISSUES_FOUND, "", _now()
        document = self.write_status(training_ended=training_ended)
        extra = [self.out_dir / RULE_STATUS_FILE, self.out_dir / layout.METRICS_FILE, self.out_dir / layout.COLLECTIONS_FILE]
        if (self.out_dir / layout.SILENT_TENSORS_FILE).exists():
            extra.append(self.out_dir / layout.SILENT_TENSORS_FILE)
        if training_ended and self._writes_run_files:
            extra.append(layout.mark_training_ended(self.out_dir))
        if self.mirror is not None:
            self.mirror.close(extra)
        return document


#: Called with every hook about to be created, before it touches its output directory (with None when smdebug's
#: constructor has not built the hook object yet): the zero-change hook (debugger.hook.zero_change) stands aside for a
#: hook the script creates itself.
_CREATION_LISTENERS: list[Callable[[HookBase | None], None]] = []


def add_creation_listener(listener: Callable[[HookBase | None], None]) -> None:
    if listener not in _CREATION_LISTENERS:
        _CREATION_LISTENERS.append(listener)


def remove_creation_listener(listener: Callable[[HookBase | None], None]) -> None:
    if listener in _CREATION_LISTENERS:
        _CREATION_LISTENERS.remove(listener)


def announce_hook_creation(hook: HookBase | None = None) -> None:
    """A hook is being created (``hook``: the object under construction, when there is one yet)."""
    for listener in list(_CREATION_LISTENERS):
        listener(hook)


#: Hooks (of either framework) created and not closed yet: closed by the job launcher, which knows how the script
#: ended, else when the process exits, so the last status document and step files are never lost.
_OPEN_HOOKS: list[HookBase] = []


def open_hooks() -> list[HookBase]:
    return list(_OPEN_HOOKS)


def close_open_hooks(training_ended: bool = True) -> None:
    for hook in list(_OPEN_HOOKS):
        try:
            hook.close(training_ended=training_ended)
        except Exception as error:  # noqa: BLE001 - closing the others matters more
            LOGGER.warning("%s for %s did not close cleanly: %s", type(hook).__name__, hook.job_name, error)
            if hook in _OPEN_HOOKS:
                _OPEN_HOOKS.remove(hook)


atexit.register(close_open_hooks)
