"""Where a stop can land while a state of moto's Step Functions interpreter is being evaluated rather than waiting
(local_runtime/interpreter_stop.py): before the state reads its timeout, and inside its task before the task is
scheduled. moto alone read the state's input as the task's timeout there: the execution ended FAILED (States.Runtime),
or its history could not be serialized. Tests force a stop at each (moto 5.2's methods; checked on import)."""

from __future__ import annotations

import importlib
from typing import Any

STOP_LANDS_INSIDE = {
    "before the state reads its timeout": (
        "moto.stepfunctions.parser.asl.component.state.exec.execute_state.ExecutionState",
        "_evaluate_with_timeout",
    ),
    "before the task is scheduled": (
        "moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service.StateTaskService",
        "_before_eval_execution",
    ),
}


def stop_point(moment: str) -> tuple[Any, str]:
    """(the class, its method's name) where ``moment``'s stop lands."""
    path, method = STOP_LANDS_INSIDE[moment]
    module_name, owner_name = path.rsplit(".", 1)
    owner = getattr(importlib.import_module(module_name), owner_name)
    if not callable(getattr(owner, method, None)):
        raise AssertionError(f"moto's interpreter moved {path}.{method}: update {__name__}")
    return owner, method
