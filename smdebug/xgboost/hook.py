"""``smdebug.xgboost.Hook``: smdebug's XGBoost hook constructor and ``create_from_json_file`` over
:class:`debugger.hook.xgboost.hook.XGBoostHook` (smdebug's defaults: every 10 rounds, the metrics collection)."""

from __future__ import annotations

from debugger.core.config import parse_rule_configs
from debugger.core.exceptions import SMDebugRuntimeError
from debugger.core.save_config import SaveConfig
from debugger.hook.container_config import (
    job_name_or_default,
    read_container_hook_config,
    rule_configs_from_environment,
)
from debugger.hook.xgboost.hook import (
    DEFAULT_SAVE_INTERVAL,
    SMDEBUG_DEFAULT_COLLECTIONS,
    XGBoostHook,
    parse_xgboost_hook_config,
)
from smdebug.core.hook_utils import as_list, check_arguments, hook_from_settings, hook_settings, local_out_dir
from smdebug.xgboost import singleton


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
        check_arguments(out_dir, include_workers)
        if export_tensorboard or tensorboard_dir:
            raise SMDebugRuntimeError("TensorBoard summaries are not written by this debugger; read the run with create_trial")
        # smdebug's XGBoost hook ignores reduction_config (with a warning): tensors are saved whole
        save = SaveConfig.parse(save_config) if save_config is not None else SaveConfig(save_interval=DEFAULT_SAVE_INTERVAL)
        settings = hook_settings(save, as_list(include_regex), save_all, dry_run, include_workers)
        directory, s3_uri = local_out_dir(str(out_dir))
        included = None if include_collections is None else as_list(include_collections)
        self._init(settings, directory, s3_uri, included, hyperparameters, train_data, validation_data)

    def _init(self, settings, directory, s3_uri, included, hyperparameters=None, train_data=None, validation_data=None):
        XGBoostHook.__init__(
            self,
            settings,
            parse_rule_configs(rule_configs_from_environment()),
            directory,
            job_name_or_default(),
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
        return hook_from_settings(cls, parse_xgboost_hook_config(read_container_hook_config(json_file_path)))
