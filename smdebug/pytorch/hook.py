"""``smd.Hook``: smdebug's PyTorch hook constructor and ``create_from_json_file`` over :class:`debugger.hook.Hook`
in its smdebug profile (smdebug's tensor names and default collections)."""

from __future__ import annotations

import os
from pathlib import Path

from debugger import storage
from debugger.config import HookSettings, parse_hook_config, parse_rule_configs
from debugger.exceptions import SMDebugRuntimeError
from debugger.hook import (
    DEFAULT_OUT_DIR,
    OUT_DIR_ENV,
    read_container_hook_config,
    rule_configs_from_environment,
    staging_directory_for,
)
from debugger.hook import Hook as DebuggerHook
from debugger.hook_steps import SMDEBUG
from debugger.modes import ModeKeys
from debugger.reductions import ReductionConfig
from debugger.save_config import SaveConfig
from debugger.trial_sources import is_s3_uri
from smdebug.pytorch import singleton

JOB_NAME_ENV = "TRAINING_JOB_NAME"


def _job_name() -> str:
    return os.environ.get(JOB_NAME_ENV) or "local-job"


def _local_out_dir(out_dir: str) -> tuple[Path, str | None]:
    """(directory written to, S3 URI mirrored to). smdebug does not merge runs: an out_dir that already
    holds saved steps is refused."""
    if is_s3_uri(out_dir):
        return staging_directory_for(out_dir), out_dir
    path = Path(os.path.expanduser(out_dir))
    if storage.list_step_files(path):
        raise SMDebugRuntimeError(
            f"The path {path} already holds a run's saved steps; give the hook an out_dir that does not exist yet"
        )
    return path, None


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
        if out_dir is None:
            raise RuntimeError("out_dir is a required argument")
        if reduction_config is not None and not isinstance(reduction_config, ReductionConfig):
            raise TypeError(f"reduction_config must be a smd.ReductionConfig; got {type(reduction_config).__name__}")
        if include_workers not in ("one", "all"):
            raise ValueError(f'include_workers must be "one" or "all"; got {include_workers!r}')
        save = SaveConfig.parse(save_config)
        regex = [include_regex] if isinstance(include_regex, str) else list(include_regex or [])
        settings = HookSettings(
            out_dir_from_config=None,
            s3_output_path=None,
            save_by_mode={mode: save.get_save_config(mode).to_json_dict() for mode in ModeKeys},
            reduction_config=reduction_config,
            include_regex=tuple(regex),
            save_all=bool(save_all),
            collection_specs=None,
            dry_run=bool(dry_run),
            include_workers=include_workers,
            export_tensorboard=bool(export_tensorboard),
            tensorboard_dir=tensorboard_dir,
        )
        directory, s3_uri = _local_out_dir(str(out_dir))
        included = None
        if include_collections is not None:
            included = [include_collections] if isinstance(include_collections, str) else list(include_collections)
            included += ["losses"]  # smdebug's PyTorch hook saves losses whatever the configuration
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
            _job_name(),
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
        settings = parse_hook_config(read_container_hook_config(json_file_path))
        directory, _ = _local_out_dir(os.environ.get(OUT_DIR_ENV) or settings.out_dir_from_config or DEFAULT_OUT_DIR)
        hook = cls.__new__(cls)
        hook._init(settings, directory, None, None)
        return hook

    def _cleanup(self) -> None:
        self.close()
