"""The hook: what runs inside the training job with the user's script. It records tensors, runs the rules
(debugger.rules) at every step, writes the step files and the rule-status document (debugger.storage), and stops
training when a rule with a StopTraining action fires.

    hook_base.py            HookBase: what the PyTorch hook and the XGBoost callback share; the registry of open hooks
    rule_runner.py          RuleRunner: the rules at every step and the rule-status document
    pytorch/                Hook, the PyTorch hook (hook.py), with its step capture, script API, model structure
    xgboost/                XGBoostHook (hook.py) and what it records (tensors.py)
    zero_change/            the hook attached to a script that creates none (zero script change), per framework
    container_config.py     the configuration files SageMaker (or the job launcher) writes into the container
    distributed.py, stall_watchdog.py, stop_training.py, failure_file.py, printed_metrics.py

``Hook`` is importable from here (loaded on first use: the job launcher imports modules of this package, such as
stop_training, before the script has imported torch, and must not import it).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Hook"]


def __getattr__(name: str) -> Any:
    if name == "Hook":
        return importlib.import_module("debugger.hook.pytorch.hook").Hook
    raise AttributeError(f"module 'debugger.hook' has no attribute {name!r}")
