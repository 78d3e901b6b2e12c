"""``smd.Hook``: smdebug's PyTorch hook constructor and ``create_from_json_file`` over :class:`debugger.hook.pytorch.hook.Hook`
in its smdebug profile (smdebug's tensor names and default collections)."""

from __future__ import annotations

from pathlib import Path

from debugger.core.config import HookSettings, parse_hook_config, parse_rule_configs
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import SaveConfig
from debugger.hook.container_config import (
    job_name_or_default,
    read_container_hook_config,
    rule_configs_from_environment,
)
from debugger.hook.pytorch.hook import Hook as DebuggerHook
from debugger.hook.pytorch.step_capture import SMDEBUG
from smdebug.core.hook_utils import as_list, check_arguments, hook_from_settings, hook_settings, local_out_dir
from smdebug.pytorch import singleton


class Hook(DebuggerHook):
    """smdebug.pytorch.Hook: same arguments, defaults and behaviour as smdebug documents (docs/api.md)."""

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
    ):
        check_arguments(out_dir, include_workers)
        if reduction_config is not None and not isinstance(reduction_config, ReductionConfig):
            raise TypeError(f"reduction_config must be a smd.ReductionConfig; got {type(reduction_config).__name__}")
        regex = as_list(include_regex)
        save = SaveConfig.parse(save_config)
        settings = hook_settings(
            save, regex, save_all, dry_run, include_workers, reduction_config, export_tensorboard, tensorboard_dir
        )
        directory, s3_uri = local_out_dir(str(out_dir))
        included = None
        if include_collections is not None:
            # smdebug's PyTorch hook saves losses whatever the configuration
            included = as_list(include_collections) + ["losses"]
            if regex:
                included.append("default")
            if save_all:
                included.append("all")
            included = list(dict.fromkeys(included))
        self._init(settings, directory, s3_uri, included)

    def _init(self, settings: HookSettings, directory: Path, s3_uri: str | None, included: list[str] | None) -> None:
        DebuggerHook.__init__(
            self,
            settings,
            parse_rule_configs(rule_configs_from_environment()),
            directory,
            job_name_or_default(),
            profile=SMDEBUG,
            s3_output_path=s3_uri,
            include_collections=included,
        )
        singleton.set_hook(self)

    @classmethod
    def create_from_json_file(cls, json_file_path=None) -> Hook:
        """The hook from the configuration file SageMaker writes: ``json_file_path``, else env
        SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json. Output: env
        DEBUG_OUTPUT_DIR (our local runtime's mapping), else the file's LocalPath, else /opt/ml/output/tensors;
        mirrored to its S3OutputPath/S3Path unless env DEBUG_OUTPUT_S3_SYNC is off."""
        return hook_from_settings(cls, parse_hook_config(read_container_hook_config(json_file_path)))

    def _cleanup(self) -> None:
        self.close()
