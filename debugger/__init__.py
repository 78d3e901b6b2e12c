"""An in-job training debugger with the semantics of SageMaker Debugger's built-in rules.

    from debugger import Hook, StopTrainingRequested
    hook = Hook.from_configs(hook_config=..., rule_configs=..., out_dir=..., job_name=...)
    hook.register_module(model)
    hook.register_loss(criterion)

See debugger/README.md.

The exports load lazily: ``contracts.rule_status`` is imported by the Lambdas, which
have neither torch nor numpy, so importing the package must not import them.
"""

from __future__ import annotations

import importlib
from typing import Any

from contracts import ContractError

_LAZY_EXPORTS = {
    "Hook": "debugger.hook.pytorch.hook",
    "StopTrainingRequested": "debugger.hook.stop_training",
    "Rule": "debugger.rules",
    "create_trial": "debugger.trial",
}

__all__ = ["ContractError", *_LAZY_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _LAZY_EXPORTS:
        return getattr(importlib.import_module(_LAZY_EXPORTS[name]), name)
    raise AttributeError(f"module 'debugger' has no attribute {name!r}")
