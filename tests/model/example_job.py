"""How the tests run the built-in example: as a module, or through the job launcher as SageMaker does."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from contracts.job import ENTRY_POINT_HYPERPARAMETER, HOOK_CONFIG_HYPERPARAMETER, RULE_CONFIGS_HYPERPARAMETER

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_DIR = REPO_ROOT / "examples" / "resnet"
TRAIN_COMMAND = [sys.executable, "-m", "model.train"]
#: What SageMaker runs: the job launcher, which gives the example the workflow's debugger configuration.
LAUNCHER_COMMAND = [sys.executable, "-c", f"from debugger.launcher import main; main({str(EXAMPLE_DIR)!r})"]


def launcher_arguments(hook_config: dict | None = None, rule_configs: list | None = None) -> list[str]:
    """The reserved hyperparameters the train Lambda adds, as script mode passes them."""
    arguments = [f"--{ENTRY_POINT_HYPERPARAMETER}", "train.py"]
    if hook_config is not None:
        arguments += [f"--{HOOK_CONFIG_HYPERPARAMETER}", json.dumps(hook_config)]
    if rule_configs is not None:
        arguments += [f"--{RULE_CONFIGS_HYPERPARAMETER}", json.dumps(rule_configs)]
    return arguments


