"""The run's objective as the job's rules see it: what the run_spec declares good (``contracts.objective``), given to
the rules that judge progress (LossNotDecreasing, Overfit, Overtraining) by the workflow as their ``objective``
RuleParameter (the objective's JSON), and whether the run has reached it: the latest value of the metric the script
reports with the debugger (smdebug's ``save_scalar``, our ``record_metric``). Imports no torch.

A run that meets its objective is not stopped for a loss that stopped falling: a converged run sits on a plateau,
and stopping it throws the result away. A metric the script only prints reaches the hook too, read from its output
with the run_spec's metric regexes (debugger.hook.printed_metrics).
"""

from __future__ import annotations

import json
import math
from typing import Any

from contracts import ContractError
from contracts.objective import Objective

#: smdebug's save_scalar saves ``scalar/<name>`` (debugger.hook.pytorch.step_capture.SCALAR_PREFIX).
SCRIPT_SCALAR_PREFIX = "scalar/"


def parse_objective(text: str, where: str) -> Objective | None:
    """The ``objective`` RuleParameter: the run_spec's objective as JSON text ("" or "None": none)."""
    text = str(text).strip()
    if text in ("", "None"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ContractError(where, f'must be the objective as JSON, such as {{"metric_name": "validation:accuracy", '
                                   f'"type": "Maximize", "target_value": 0.9}}: {error}') from None
    return Objective.from_json(value, where)


def latest_metric(trial: Any, name: str, step: int | None = None) -> float | None:
    """The latest value of the script's metric ``name`` (at or before ``step`` on a saved trial); None if unseen."""
    live = getattr(trial, "latest_metrics", None)
    if isinstance(live, dict):
        value = live.get(name)
        return None if value is None else float(value)
    for tensor_name in (SCRIPT_SCALAR_PREFIX + name, name):
        if not trial.has_tensor(tensor_name):
            continue
        steps = [saved for saved in trial.tensor(tensor_name).steps() if step is None or saved <= step]
        if steps:
            return float(trial.tensor(tensor_name).value(steps[-1]).reshape(-1)[0])
    return None


def metric_values(trial: Any, name: str) -> list[float]:
    """Every value of the script's metric ``name`` so far, in order (the live trial's record, or a saved trial's)."""
    live = getattr(trial, "metric_history", None)
    if isinstance(live, dict):
        return [float(value) for value in live.get(name, ())]
    for tensor_name in (SCRIPT_SCALAR_PREFIX + name, name):
        if trial.has_tensor(tensor_name):
            tensor = trial.tensor(tensor_name)
            return [float(tensor.value(step).reshape(-1)[0]) for step in tensor.steps()]
    return []


def objective_met(trial: Any, objective: Objective | None, step: int | None = None) -> tuple[bool, float | None]:
    """(whether the run's latest metric meets ``objective``, that value)."""
    if objective is None:
        return False, None
    value = latest_metric(trial, objective.metric_name, step)
    return (value is not None and math.isfinite(value) and objective.met(value)), value
