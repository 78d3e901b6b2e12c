"""The debugger for XGBoost: a training callback that saves, at the save interval, what smdebug's XGBoost hook
saves, into the same storage the PyTorch hook writes (so the same trial reader and S3 mirror serve it), and runs
the rules in the job after every boosting round.

    booster = xgboost.train(params, dtrain, num_round, evals=[(dtrain, "train"), (dval, "validation")],
                            callbacks=[XGBoostHook.create_from_json_file(hyperparameters=params,
                                                                         train_data=dtrain, validation_data=dval)])

Tensors (smdebug's names and collections; a step is a boosting round, numbered from 0 over the model's rounds,
so a job resumed from a saved model goes on counting):

    metrics             <data set>-<metric> per evaluation (train-logloss, validation-logloss, validation-auc)
    losses              the metrics that fall as the model improves (not auc, map, ndcg, pre)
    hyperparameters     hyperparameters/<name>
    predictions, labels the validation set's predictions and labels
    feature_importance  feature_importance/<type>/<feature> for weight, gain, cover, total_gain, total_cover,
                        each type normalised to sum to 1
    average_shap        average_shap/<feature>: mean SHAP value (XGBoost's pred_contribs) over a sample of the
                        training set and, for a multi-class model, over the classes (the bias term is not saved)
    full_shap           full_shap/<feature>: that sample's SHAP values of the feature

A scalar (a metric, a hyperparameter, an importance, an average SHAP value) is saved as smdebug saves it: a
one-element array.
    trees               trees/Tree, trees/Node, trees/Depth, trees/Yes, trees/No, trees/Gain, trees/Cover:
                        one row per node of the trees the round added

The evaluation metrics are measured every round whatever the save interval: the rules (Overtraining, Overfit,
LossNotDecreasing) see every round, as the PyTorch hook's rules see every step's loss. A rule whose action is
StopTraining raises :class:`StopTrainingRequested` from the callback, after everything recorded is on disk.
torch is never imported: an XGBoost job does not need it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from contracts import ContractError
from debugger.core.collection import ALL, DEFAULT, LOSSES, METRICS, CollectionManager
from debugger.core.config import HookSettings, RuleSpec, parse_hook_config, parse_rule_configs
from debugger.core.modes import ModeKeys
from debugger.core.save_config import SaveConfig
from debugger.hook.container_config import (
    is_platform_job,
    job_name_or_default,
    output_directory,
    read_container_hook_config,
    rule_configs_from_environment,
)
from debugger.hook.distributed import WorkerRole
from debugger.hook.hook_base import (  # noqa: F401 - close_open_hooks importable from here as before
    HookBase,
    announce_hook_creation,
    apply_collection_spec,
    close_open_hooks,
    included_collections,
)  # noqa: F401 - importable from here as before
from debugger.hook.stop_training import StopTrainingRequested  # noqa: F401 - importable from here as before
from debugger.hook.xgboost.tensors import feature_importance_tensors, shap_tensors, tree_tensors
from debugger.storage import layout
from debugger.storage.s3_mirror import mirroring_enabled
from debugger.storage.state_store import StateStore, previous_status, remove_steps_from, reopen_run
from debugger.storage.step_writer import StepRecord
from debugger.trial.live_trial import LiveTrial

HYPERPARAMETERS, PREDICTIONS, LABELS = "hyperparameters", "predictions", "labels"
FEATURE_IMPORTANCE, AVERAGE_SHAP, FULL_SHAP, TREES = "feature_importance", "average_shap", "full_shap", "trees"
#: smdebug's XGBoost collections and their patterns (smdebug/xgboost/collection.py). Metrics and losses are widened to
#: every name xgboost gives an evaluation ("validation-error@0.7", "eval-ndcg@5"), which smdebug's patterns leave
#: unsaved; the SHAP patterns leave out the bias term alone (smdebug's "[^/bias]$" also drops every feature whose
#: name ends in b, i, a or s): docs/smdebug-compatibility.md.
XGBOOST_COLLECTION_PATTERNS = {
    ALL: [],
    DEFAULT: [],
    METRICS: [r"^[A-Za-z0-9_]+-[^/]+$"],
    LOSSES: [r"^[A-Za-z0-9_]+-(?!(auc|aucpr|map|ndcg|pre)(@.*)?$)[^/]+$"],
    HYPERPARAMETERS: ["^hyperparameters/.*$"],
    PREDICTIONS: ["^predictions$"],
    LABELS: ["^labels$"],
    FEATURE_IMPORTANCE: ["^feature_importance/.*"],
    AVERAGE_SHAP: ["^average_shap/(?!bias$)"],
    FULL_SHAP: ["^full_shap/(?!bias$)"],
    TREES: ["^trees/.*"],
}
#: smdebug's XGBoost hook saves every 10 rounds unless configured, and the metrics collection by default.
DEFAULT_SAVE_INTERVAL = 10
SMDEBUG_DEFAULT_COLLECTIONS = (METRICS,)
#: What our workflow's jobs save when the configuration names no collection.
NATIVE_DEFAULT_COLLECTIONS = (METRICS, LOSSES, HYPERPARAMETERS, PREDICTIONS, LABELS, FEATURE_IMPORTANCE, AVERAGE_SHAP, TREES)
#: Hyperparameters whose value is the learning rate (reported with a rule's evidence).
LEARNING_RATE_NAMES = ("eta", "learning_rate")


def parse_xgboost_hook_config(hook_config: dict | str | None) -> HookSettings:
    """A DebugHookConfig (dict or JSON text) as the XGBoost hook reads it: without a save_interval, smdebug's
    XGBoost default (every 10 rounds)."""
    config = json.loads(hook_config) if isinstance(hook_config, str) else dict(hook_config or {})
    parameters = dict(config.get("HookParameters") or {})
    parameters.setdefault("save_interval", str(DEFAULT_SAVE_INTERVAL))
    return parse_hook_config({**config, "HookParameters": parameters})


class _DMatrixAttribute:
    """An attribute that holds an xgboost.DMatrix or None, refusing anything else with the fix in the message."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, hook: Any, owner: type | None = None) -> xgb.DMatrix | None:
        return self if hook is None else hook.__dict__.get(self.name)

    def __set__(self, hook: Any, value: Any) -> None:
        if value is not None and not isinstance(value, xgb.DMatrix):
            raise ContractError(
                self.name,
                f"must be an xgboost.DMatrix (got {type(value).__name__}); load files with "
                "xgboost.DMatrix('train.csv?format=csv&label_column=0') first",
            )
        hook.__dict__[self.name] = value


class XGBoostHook(HookBase, xgb.callback.TrainingCallback):
    """The XGBoost training callback (``callbacks=[hook]``); build it with :meth:`from_configs` or
    :meth:`create_from_json_file`. ``hyperparameters``, ``train_data`` and ``validation_data`` may be set after."""

    mode = ModeKeys.GLOBAL  # a boosting round has no train/eval mode
    train_data = _DMatrixAttribute()
    validation_data = _DMatrixAttribute()

    def __init__(
        self,
        settings: HookSettings,
        rule_specs: list[RuleSpec],
        out_dir: str | Path,
        job_name: str,
        *,
        hyperparameters: Mapping[str, Any] | None = None,
        train_data: xgb.DMatrix | None = None,
        validation_data: xgb.DMatrix | None = None,
        include_collections: list[str] | None = None,
        source_dir: str | Path | None = None,
        s3_output_path: str | None = None,
        default_collections: tuple[str, ...] = NATIVE_DEFAULT_COLLECTIONS,
        status_heartbeat_seconds: float = 60.0,
    ):
        announce_hook_creation(self)  # a hook of the script's own: the zero-change hook stands aside
        xgb.callback.TrainingCallback.__init__(self)
        self.settings = settings
        # Several XGBoost instances (SM_HOSTS) write one rule-status document: the chief's (rank 0).
        self.worker_role = WorkerRole.of_this_process()
        self.out_dir = Path(out_dir)
        self.job_name = job_name
        self.dry_run = settings.dry_run
        self.save_config: SaveConfig = settings.save_config
        self.hyperparameters = dict(hyperparameters or {})
        self.train_data, self.validation_data = train_data, validation_data
        self.collection_manager = CollectionManager(XGBOOST_COLLECTION_PATTERNS)
        self.include_collections = self._included(settings, include_collections, default_collections)
        self.trial = LiveTrial(self.out_dir, keep_saved_steps=2, expose_signals=False, flush=self._flush_writer)
        self.trial.collection_definitions = self.collection_manager.collections
        for requirement in self._load_rules(rule_specs, source_dir):
            if requirement.collection not in self.include_collections:
                self.include_collections.append(requirement.collection)
        self._start_status(status_heartbeat_seconds)
        destination = s3_output_path or settings.s3_output_path
        self._start_output(destination if destination and (s3_output_path or mirroring_enabled(destination)) else None)
        self._resume_interrupted_run()
        self._opened()

    def _resume_interrupted_run(self) -> None:
        """A job restarted after a spot interruption goes on in its debug output, as the PyTorch hook does: the
        interrupted run's rule statuses, evidence and actions carry over, the rounds its rules judged are not judged
        again, and its step files from the first round this run redoes (from its checkpoint, or from 0) go. The
        rounds need no saved state: a round's number is the model's own count."""
        #: The checkpoint directory watched: a checkpoint written means its rounds' step files go to disk first
        self._checkpoints = StateStore.from_environment(self.job_name)
        previous = previous_status(self.out_dir, self.job_name, platform_job=is_platform_job(self.job_name))
        if previous is not None and not self.dry_run:
            reopen_run(self.out_dir)
        self._judged_through = -1
        self._resuming = previous is not None and not self.dry_run
        self._resumed_status = previous
        if previous is not None:
            self._restore_status(previous)
            self._judged_through = previous.last_step

    # ------------------------------------------------------------------ configuration

    def _included(self, settings: HookSettings, include: list[str] | None, defaults: tuple[str, ...]) -> list[str]:
        for spec in settings.collection_specs or ():
            apply_collection_spec(self.collection_manager, spec)
            if not spec.include_regex and spec.name not in XGBOOST_COLLECTION_PATTERNS:
                raise ContractError(
                    f"{spec.where}.CollectionName",
                    f"{spec.name!r} is not an XGBoost collection ({', '.join(sorted(XGBOOST_COLLECTION_PATTERNS))}); "
                    "a collection of your own needs CollectionParameters.include_regex",
                )
        return included_collections(self.collection_manager, settings, include, defaults)

    @classmethod
    def from_configs(
        cls,
        hook_config: dict | str | None = None,
        rule_configs: list | str | None = None,
        out_dir: str | Path | None = None,
        job_name: str | None = None,
        **options: Any,
    ) -> XGBoostHook:
        """From DebugHookConfig / DebugRuleConfigurations (dicts or JSON text); without a save_interval, smdebug's
        XGBoost default (every 10 rounds). Output: ``out_dir``, else env DEBUG_OUTPUT_DIR, else the config's
        LocalPath, else /opt/ml/output/tensors."""
        settings = parse_xgboost_hook_config(hook_config)
        directory = output_directory(settings.out_dir_from_config, out_dir)
        return cls(settings, parse_rule_configs(rule_configs), directory, job_name_or_default(job_name), **options)

    @classmethod
    def create_from_json_file(cls, json_config_path: str | Path | None = None, **options: Any) -> XGBoostHook:
        """The hook from the configuration file SageMaker (or our job launcher) writes into the container: at
        ``json_config_path``, else env SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json;
        the rules from env DEBUGGER_RULE_CONFIG_FILE_PATH, if set."""
        return cls.from_configs(read_container_hook_config(json_config_path), rule_configs_from_environment(), **options)

    # ------------------------------------------------------------------ the callback

    def after_iteration(self, model: xgb.Booster, epoch: int, evals_log: Mapping[str, Mapping[str, list]]) -> bool:
        """Record the round, run the rules; raise StopTrainingRequested when a rule's action stops training."""
        if self._stop is not None:
            raise self._stop
        step = model.num_boosted_rounds() - 1  # the model's own round count: a resumed job goes on counting
        if self._checkpoints.checkpoint_updated():
            # the script checkpointed the rounds so far: their step files are on disk before a restart could go on
            # after them (the writer is a background thread; a reclaimed instance loses what it had queued)
            self._flush_writer()
        if self._resuming:
            self._resuming = False
            remove_steps_from(self.out_dir, step)
            self._first_step = step
        self.trial.begin_step(step, ModeKeys.GLOBAL, step)
        metrics = {f"{data}-{metric}": float(values[-1]) for data, results in evals_log.items() for metric, values in results.items()}
        for name, value in metrics.items():
            member_of = tuple(c for c in (METRICS, LOSSES) if self.collection_manager.get(c).matches(name))
            self.trial.add_signal(name, member_of, step, value)
            self._report_metric(name, value, step)
        record = self._record(model, step, metrics)
        if record:
            self.trial.add_saved_step(step, dict(record.tensors), record.membership, ModeKeys.GLOBAL, step)
            if not self.dry_run:
                self._writer.submit(record)
                if not self._collections_written:
                    self._write_collections()
        self._update_evidence(step, self._evidence_loss(metrics), None)
        self._last_checked_step = step
        if step > self._judged_through:  # a restarted job's rules do not judge again what the interrupted run did
            self._evaluate_rules(step, self._learning_rate())
        if self._stop is not None:
            self._flush_writer()
            raise self._stop
        return False

    def _saving(self, step: int) -> set[str]:
        saving = set()
        for name in self.include_collections:
            own = self.collection_manager.get(name).save_config
            config = self.save_config if own is None else own.merged_with(self.save_config)
            if config.should_save_step(ModeKeys.GLOBAL, step):
                saving.add(name)
        return saving

    def _record(self, model: xgb.Booster, step: int, metrics: dict[str, float]) -> StepRecord:
        saving = self._saving(step)
        record = StepRecord(step, ModeKeys.GLOBAL.name, step)
        if not saving:
            return record
        tensors: dict[str, Any] = {name: np.array([value]) for name, value in metrics.items()}
        if HYPERPARAMETERS in saving or ALL in saving:
            tensors.update(self._hyperparameter_tensors())
        if self.validation_data is not None and saving & {PREDICTIONS, LABELS, ALL}:
            tensors[PREDICTIONS] = np.asarray(model.predict(self.validation_data))
            tensors[LABELS] = np.asarray(self.validation_data.get_label())
        if saving & {FEATURE_IMPORTANCE, ALL}:
            tensors.update(feature_importance_tensors(model))
        if self.train_data is not None and saving & {AVERAGE_SHAP, FULL_SHAP, ALL}:
            tensors.update(shap_tensors(model, self.train_data))
        if saving & {TREES, ALL}:
            tensors.update(tree_tensors(model, step))
        for name, value in tensors.items():
            collections = [c for c in self.include_collections if c in saving and self.collection_manager.get(c).matches(name)]
            if collections:
                record.add(name, value, collections)
        return record

    def _hyperparameter_tensors(self) -> dict[str, np.ndarray]:
        tensors = {}
        for name, value in self.hyperparameters.items():
            if isinstance(value, (bool, int, float, str, np.number)):
                tensors[f"hyperparameters/{name}"] = np.array([value])  # a one-element array, as smdebug saves it
        return tensors

    def _evidence_loss(self, metrics: dict[str, float]) -> float | None:
        """The loss the planner's evidence follows: the first validation loss metric, else the training one."""
        losses = [name for name in metrics if self.collection_manager.get(LOSSES).matches(name)]
        chosen = next((name for name in losses if not name.startswith("train-")), None) or next(iter(losses), None)
        return metrics[chosen] if chosen else None

    def _learning_rate(self) -> float | None:
        for name in LEARNING_RATE_NAMES:
            value = self.hyperparameters.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        return None

    def record_metric(self, name: str, value: float, step: int | None = None) -> None:
        """A metric of the script's own (e.g. the final validation accuracy) for the status document."""
        step = max(self._last_checked_step, 0) if step is None else int(step)
        self.trial.add_scalar(name, METRICS, step, float(value))
        self._report_metric(name, float(value), step)
        if not self.dry_run:
            layout.append_metric(self.out_dir, name, step, float(value))

    save_scalar = record_metric  # smdebug's name (sm_metric and timestamp are not needed here)

    # ------------------------------------------------------------------ ending

    def after_training(self, model: xgb.Booster) -> xgb.Booster:
        self._flush_writer()
        self.write_status()
        return model
