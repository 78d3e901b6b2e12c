"""Where a job's debugger configuration comes from: the files SageMaker (or the job launcher) writes into the
container, and the output directory. Framework-free: the PyTorch hook and the XGBoost hook both read them."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from contracts import ContractError
from contracts.debugger_config import normalize_container_hook_config
from contracts.job import DEFAULT_HOOK_CONFIG_FILE, HOOK_CONFIG_FILE_ENV, RULE_CONFIGS_FILE_ENV
from debugger.storage.s3_mirror import split_s3_uri

DEFAULT_OUT_DIR = "/opt/ml/output/tensors"
OUT_DIR_ENV = "DEBUG_OUTPUT_DIR"
JOB_NAME_ENV = "TRAINING_JOB_NAME"
DEFAULT_JOB_NAME = "local-job"


def output_directory(configured: str | None, out_dir: str | Path | None = None) -> str | Path:
    """The hook's output directory: ``out_dir`` if given, else env DEBUG_OUTPUT_DIR (our local runtime's mapping),
    else the configuration's LocalPath (``configured``), else /opt/ml/output/tensors."""
    return out_dir or os.environ.get(OUT_DIR_ENV) or configured or DEFAULT_OUT_DIR


def job_name_or_default(given: str | None = None) -> str:
    """``given``, else the job's name SageMaker sets (env TRAINING_JOB_NAME), else "local-job"."""
    return given or os.environ.get(JOB_NAME_ENV) or DEFAULT_JOB_NAME


def is_platform_job(job_name: str) -> bool:
    """Whether ``job_name`` is the name the platform gave this job (env TRAINING_JOB_NAME: unique per job, so output
    under it from an earlier run is this job's own, restarted after a spot interruption)."""
    return os.environ.get(JOB_NAME_ENV) == job_name


def staging_directory_for(s3_uri: str) -> Path:
    """A local directory for a hook whose out_dir is an s3:// URI (the output is mirrored there)."""
    split_s3_uri(s3_uri)
    base = os.environ.get(OUT_DIR_ENV)
    return Path(base) if base else Path(tempfile.mkdtemp(prefix="debugger-s3-staging-"))


def _read_json_file(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no {what} at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ContractError(str(path), f"the {what} must be a JSON file: {error}") from None


def read_container_hook_config(json_config_path: str | Path | None = None) -> dict[str, Any]:
    """The hook configuration file SageMaker writes into the container, in the DebugHookConfig shape: at
    ``json_config_path``, else env SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json."""
    path = Path(json_config_path or os.environ.get(HOOK_CONFIG_FILE_ENV) or DEFAULT_HOOK_CONFIG_FILE)
    return normalize_container_hook_config(_read_json_file(path, f"hook configuration (env {HOOK_CONFIG_FILE_ENV})"))


def rule_configs_from_environment() -> list | None:
    """The rules the job launcher wrote next to the hook configuration (env DEBUGGER_RULE_CONFIG_FILE_PATH)."""
    path = os.environ.get(RULE_CONFIGS_FILE_ENV)
    return _read_json_file(Path(path), f"rule configurations (env {RULE_CONFIGS_FILE_ENV})") if path else None
