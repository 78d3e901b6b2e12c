"""The built-in example job's inputs as SageMaker's container contract gives them: hyperparameters, the debugger
hook, the data channels, the device and thread count; and the failure file it writes when it cannot run."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from contracts.atomic_files import write_atomically
from contracts.job import (
    DEBUG_OUTPUT_DIR_ENV,
    DEFAULT_DEBUG_OUTPUT_DIR,
    DEFAULT_FAILURE_FILE,
    DEFAULT_HOOK_CONFIG_FILE,
    DEFAULT_INPUT_CONFIG_DIR,
    FAILURE_FILE_ENV,
    HOOK_CONFIG_FILE_ENV,
    MAX_FAILURE_TEXT,
    parse_script_mode_arguments,
    training_device,
)
from debugger import Hook
from model.data import DataChannelError, load_channel
from model.hyperparameters import TrainingHyperparameters, parse_hyperparameters

DEFAULT_INPUT_DIR = "/opt/ml/input"
DEFAULT_JOB_NAME = "training-job"

#: The rule the job runs when the configuration names none: stop at the first non-finite tensor.
DEFAULT_RULE_CONFIGS = [
    {
        "RuleConfigurationName": "ExplodingTensor",
        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": '[{"name":"StopTraining"}]'},
    }
]


class BadInput(Exception):
    """Input the job cannot run with; ``kind`` prefixes the failure text, the message names the field and the fix."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


class JobTerminated(BaseException):
    """SIGTERM arrived: stop at once, write nothing more."""


def log(message: str) -> None:
    print(message, flush=True)


# --------------------------------------------------------------------------- inputs


def read_hyperparameters(argv: list[str], environ: Mapping[str, str]) -> TrainingHyperparameters:
    """From script-mode argv, else SM_HPS, else hyperparameters.json, else the defaults."""
    if argv:
        return parse_hyperparameters(parse_script_mode_arguments(argv))
    if environ.get("SM_HPS"):
        try:
            raw = json.loads(environ["SM_HPS"])
        except json.JSONDecodeError as error:
            raise BadInput(
                "InvalidHyperparameters", f"env SM_HPS must be a JSON object of hyperparameters: {error}"
            ) from None
        if not isinstance(raw, dict):
            raise BadInput("InvalidHyperparameters", "env SM_HPS must be a JSON object of hyperparameters")
        return parse_hyperparameters(raw)
    path = Path(environ.get("SM_INPUT_CONFIG_DIR", DEFAULT_INPUT_CONFIG_DIR)) / "hyperparameters.json"
    if not path.is_file():
        return TrainingHyperparameters()
    try:
        raw = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadInput("InvalidHyperparameters", f"{path} must be a JSON object of hyperparameters: {error}") from None
    if not isinstance(raw, dict):
        raise BadInput("InvalidHyperparameters", f"{path} must be a JSON object of hyperparameters")
    return parse_hyperparameters(raw)


def create_hook(environ: Mapping[str, str]) -> tuple[Hook, str]:
    """The debugger hook, as any script written for SageMaker Debugger gets it: from the JSON file the platform
    writes (env SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json) with the rules beside
    it. Without that file: ExplodingTensor with a StopTraining action. Returns (hook, what it was made from)."""
    config_path = environ.get(HOOK_CONFIG_FILE_ENV) or (
        DEFAULT_HOOK_CONFIG_FILE if Path(DEFAULT_HOOK_CONFIG_FILE).is_file() else None
    )
    if config_path:
        return Hook.create_from_json_file(config_path), f"hook configuration {config_path}"
    hook = Hook.from_configs(
        hook_config=None,
        rule_configs=DEFAULT_RULE_CONFIGS,
        out_dir=environ.get(DEBUG_OUTPUT_DIR_ENV) or DEFAULT_DEBUG_OUTPUT_DIR,
        job_name=environ.get("TRAINING_JOB_NAME") or DEFAULT_JOB_NAME,
    )
    return hook, "no hook configuration file: the default rule ExplodingTensor with action StopTraining"


def channel_directory(name: str, environ: Mapping[str, str]) -> Path:
    """SM_CHANNEL_<NAME>, else SageMaker's own layout ${SM_INPUT_DIR:-/opt/ml/input}/data/<name>."""
    variable = f"SM_CHANNEL_{name.upper()}"
    return Path(environ.get(variable) or Path(environ.get("SM_INPUT_DIR") or DEFAULT_INPUT_DIR) / "data" / name)


def load_channels(environ: Mapping[str, str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    channels = {}
    for name in ("train", "test"):
        directory = channel_directory(name, environ)
        try:
            channels[name] = load_channel(directory)
        except DataChannelError as error:
            raise BadInput(
                "MissingChannel" if not directory.is_dir() else "InvalidChannel",
                f"channel '{name}' (env SM_CHANNEL_{name.upper()}): {error}",
            ) from None
    return channels


def pick_device(environ: Mapping[str, str]) -> tuple[torch.device, str]:
    """The GPU when the container has one, else the CPU; and why (for the job's log)."""
    cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    name, why = training_device(cuda_devices, environ)
    return torch.device(name), why


def thread_count(environ: Mapping[str, str]) -> int:
    text = environ.get("TRAINING_NUM_THREADS", "").strip()
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise BadInput("InvalidEnvironment", f"env TRAINING_NUM_THREADS must be a whole number >= 1; got {text!r}")
    return int(text)


def write_failure(environ: Mapping[str, str], text: str) -> None:
    text = text[:MAX_FAILURE_TEXT]
    print(text, file=sys.stderr, flush=True)
    path = Path(environ.get(FAILURE_FILE_ENV, DEFAULT_FAILURE_FILE))
    try:
        write_atomically(path, lambda handle: handle.write(text), mode="w")
    except OSError as error:
        print(f"could not write the failure file {path}: {error}", file=sys.stderr, flush=True)
