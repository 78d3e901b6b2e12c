"""The hook: what runs inside the training job with the user's script. It records tensors, runs the rules
(debugger.rules) at every step, writes the step files and the rule-status document (debugger.storage), and stops
training when a rule with a StopTraining action fires.

    torch_hook.py           Hook, the PyTorch hook (with its mixins hook_steps, hook_rules, hook_api)
    hook_common.py          what the PyTorch hook and the XGBoost callback share; the registry of open hooks
    xgboost_hook.py         XGBoostHook (xgboost_tensors.py: what it records)
    zero_change*.py         the hook attached to a script that creates none (zero script change)
    container_config.py     the configuration files SageMaker (or the job launcher) writes into the container
    distributed.py, model_structure.py, stall_watchdog.py, stop_training.py, failure_file.py

``Hook`` is importable from here (loaded on first use: the job launcher imports modules of this package, such as
stop_training, before the script has imported torch, and must not import it).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Hook"]


def __getattr__(name: str) -> Any:
    if name == "Hook":
        return importlib.import_module("debugger.hook.torch_hook").Hook
    raise AttributeError(f"module 'debugger.hook' has no attribute {name!r}")
