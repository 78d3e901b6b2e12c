"""``smdebug.xgboost.Hook``: smdebug's XGBoost hook constructor and ``create_from_json_file`` over
:class:`debugger.xgboost_hook.XGBoostHook` (smdebug's defaults: every 10 rounds, the metrics collection)."""

from __future__ import annotations

import os
from pathlib import Path

from debugger import storage
from debugger.config import HookSettings, parse_hook_config, parse_rule_configs
from debugger.container_config import (
    DEFAULT_OUT_DIR,
    OUT_DIR_ENV,
    read_container_hook_config,
    rule_configs_from_environment,
)
from debugger.exceptions import SMDebugRuntimeError
from debugger.modes import ModeKeys
from debugger.save_config import SaveConfig
from debugger.trial_sources import is_s3_uri
from debugger.xgboost_hook import DEFAULT_SAVE_INTERVAL, SMDEBUG_DEFAULT_COLLECTIONS, XGBoostHook
from smdebug.xgboost import singleton

JOB_NAME_ENV = "TRAINING_JOB_NAME"


def _directory(out_dir: str) -> tuple[Path, str | None]:
    """(directory written to, S3 URI mirrored to). smdebug does not merge runs: an out_dir that already holds
    saved steps is refused."""
    if is_s3_uri(out_dir):
        import tempfile

        base = os.environ.get(OUT_DIR_ENV)
        return (Path(base) if base else Path(tempfile.mkdtemp(prefix="debugger-s3-staging-"))), out_dir
    path = Path(os.path.expanduser(out_dir))
    if storage.list_step_files(path):
        raise SMDebugRuntimeError(
            f"The path {path} already holds a run's saved steps; give the hook an out_dir that does not exist yet"
        )
    return path, None


class Hook(XGBoostHook):
    """smdebug.xgboost.Hook: the arguments, defaults and behaviour smdebug documents (docs/xgboost.md)."""

    def __init__(
        self,
        out_dir=None,
        export_tensorboard=False,
        tensorboard_dir=None,
        dry_run=False,
        reduction_config=None,
        save_config=None,
        include_regex=None,
        include_collections=None,
        save_all=False,
        include_workers="one",
        hyperparameters=None,
        train_data=None,
        validation_data=None,
    ):
        if out_dir is None:
            raise RuntimeError("out_dir is a required argument")
        if export_tensorboard or tensorboard_dir:
            raise SMDebugRuntimeError("TensorBoard summaries are not written by this debugger; read the run with create_trial")
        if include_workers not in ("one", "all"):
            raise ValueError(f'include_workers must be "one" or "all"; got {include_workers!r}')
        # smdebug's XGBoost hook ignores reduction_config (with a warning): tensors are saved whole
        save = SaveConfig.parse(save_config) if save_config is not None else SaveConfig(save_interval=DEFAULT_SAVE_INTERVAL)
        regex = [include_regex] if isinstance(include_regex, str) else list(include_regex or [])
        settings = HookSettings(
            out_dir_from_config=None,
            s3_output_path=None,
            save_by_mode={mode: save.get_save_config(mode).to_json_dict() for mode in ModeKeys},
            reduction_config=None,
            include_regex=tuple(regex),
            save_all=bool(save_all),
            collection_specs=None,
            dry_run=bool(dry_run),
            include_workers=include_workers,
        )
        directory, s3_uri = _directory(str(out_dir))
        included = None
        if include_collections is not None:
            included = [include_collections] if isinstance(include_collections, str) else list(include_collections)
        self._init(settings, directory, s3_uri, included, hyperparameters, train_data, validation_data)

    def _init(self, settings, directory, s3_uri, included, hyperparameters=None, train_data=None, validation_data=None):
        XGBoostHook.__init__(
            self,
            settings,
            parse_rule_configs(rule_configs_from_environment()),
            directory,
            os.environ.get(JOB_NAME_ENV) or "local-job",
            hyperparameters=hyperparameters,
            train_data=train_data,
            validation_data=validation_data,
            include_collections=included,
            s3_output_path=s3_uri,
            default_collections=SMDEBUG_DEFAULT_COLLECTIONS,
        )
        singleton.set_hook(self)

    @classmethod
    def create_from_json_file(cls, json_file_path=None) -> Hook:
        """The hook from the configuration file SageMaker writes: ``json_file_path``, else env
        SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json (every 10 rounds unless it says).
        Output: env DEBUG_OUTPUT_DIR (our local runtime's mapping), else the file's LocalPath, else
        /opt/ml/output/tensors; mirrored to its S3OutputPath/S3Path unless env DEBUG_OUTPUT_S3_SYNC is off."""
        config = read_container_hook_config(json_file_path)
        parameters = dict(config.get("HookParameters") or {})
        parameters.setdefault("save_interval", str(DEFAULT_SAVE_INTERVAL))
        settings = parse_hook_config({**config, "HookParameters": parameters})
        directory, _ = _directory(os.environ.get(OUT_DIR_ENV) or settings.out_dir_from_config or DEFAULT_OUT_DIR)
        hook = cls.__new__(cls)
        hook._init(settings, directory, None, None)
        return hook
