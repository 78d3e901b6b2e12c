"""What smdebug's framework hooks (``smdebug.pytorch.Hook``, ``smdebug.xgboost.Hook``) do alike with their
constructor's arguments: the checks smdebug makes, the settings they become, the output directory. Imports no
torch."""

from __future__ import annotations

import os
from pathlib import Path

from debugger.core.config import HookSettings
from debugger.core.exceptions import SMDebugRuntimeError
from debugger.core.modes import ModeKeys
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import SaveConfig
from debugger.hook.container_config import is_platform_job, job_name_or_default, output_directory, staging_directory_for
from debugger.hook.hook_base import announce_hook_creation
from debugger.storage import layout
from debugger.storage.state_store import previous_status
from debugger.trial.trial_sources import is_s3_uri


def check_arguments(out_dir, include_workers) -> None:
    if out_dir is None:
        raise RuntimeError("out_dir is a required argument")
    if include_workers not in ("one", "all"):
        raise ValueError(f'include_workers must be "one" or "all"; got {include_workers!r}')


def as_list(names: str | list[str] | None) -> list[str]:
    """smdebug takes one name or a list of them (include_regex, include_collections)."""
    return [names] if isinstance(names, str) else list(names or [])


def hook_settings(
    save: SaveConfig,
    include_regex: list[str],
    save_all,
    dry_run,
    include_workers: str,
    reduction_config: ReductionConfig | None = None,
    export_tensorboard=False,
    tensorboard_dir: str | None = None,
) -> HookSettings:
    """The settings a hook built from constructor arguments runs with (no configuration file, no S3 path)."""
    return HookSettings(
        out_dir_from_config=None,
        s3_output_path=None,
        save_by_mode={mode: save.get_save_config(mode).to_json_dict() for mode in ModeKeys},
        reduction_config=reduction_config,
        include_regex=tuple(include_regex),
        save_all=bool(save_all),
        collection_specs=None,
        dry_run=bool(dry_run),
        include_workers=include_workers,
        export_tensorboard=bool(export_tensorboard),
        tensorboard_dir=tensorboard_dir,
    )


def local_out_dir(out_dir: str) -> tuple[Path, str | None]:
    """(directory written to, S3 URI mirrored to). As smdebug (hook_utils.verify_and_get_out_dir), an out_dir whose
    run ended (its end-of-training marker) is refused; a run that did not end, or this platform job's own run, goes on
    there: a job restarted after a spot interruption resumes in its own debug output (the hook's spot-resume state says
    from which step)."""
    announce_hook_creation()
    if is_s3_uri(out_dir):
        return staging_directory_for(out_dir), out_dir
    path = Path(os.path.expanduser(out_dir))
    job_name = job_name_or_default()
    restarted = previous_status(path, job_name, platform_job=is_platform_job(job_name)) is not None
    # this job's own run marked its end and was then reclaimed: its restart goes on there (a new instance's local
    # out_dir would be empty on SageMaker)
    if (path / layout.TRAINING_ENDED_FILE).exists() and not restarted:
        raise SMDebugRuntimeError(
            f"The path {path} already holds a run that ended; give the hook an out_dir that does not exist yet"
        )
    return path, None


def hook_from_settings(hook_class: type, settings: HookSettings):
    """A ``hook_class`` (``_init(settings, directory, s3_uri, included)``) for a configuration file's settings, writing
    to env DEBUG_OUTPUT_DIR (our local runtime's mapping), else the file's LocalPath, else /opt/ml/output/tensors."""
    directory, _ = local_out_dir(str(output_directory(settings.out_dir_from_config)))
    hook = hook_class.__new__(hook_class)
    hook._init(settings, directory, None, None)
    return hook
