"""The reader of the differential harness: what a trial reads back, as one JSON document.

The same code runs under real smdebug 1.0.34 and under ours (it imports whichever ``smdebug`` the interpreter finds),
so it uses only smdebug's documented analysis API (docs/analysis.md): ``create_trial``, the trial's steps, modes,
tensor names per mode, step, collection and regex, each tensor's steps, values, reductions (saved and computed on
read), shapes and ``prev_steps``, ``has_passed_step``, a custom Rule run by ``invoke_rule`` (the steps it is invoked
at, what it required, where its condition was met) and live reading with ``wait_for_steps``. Standard library and
numpy only besides smdebug.

A call that raises is recorded as ``{"error": "<exception class>"}``: the exception is part of the behaviour compared.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

MODE_NAMES = ("GLOBAL", "TRAIN", "EVAL", "PREDICT")
#: The reductions every tensor is asked for at every saved step (computed on read when only the tensor was saved).
READ_REDUCTIONS = (
    ("min", False), ("max", False), ("mean", False), ("std", False), ("variance", False), ("sum", False),
    ("prod", False), ("l1", False), ("l2", False), ("mean", True), ("max", True), ("l2", True),
)  # fmt: skip
#: Values of tensors with more elements than this are summarised (sum, l2, first elements) rather than listed.
LISTED_ELEMENTS = 4096


def _kind(exception: BaseException) -> str:
    """The exception's class name; for numpy's own classes (their names change between numpy 1 and 2) the builtin
    exception they derive from."""
    kind = type(exception)
    if kind.__module__.split(".")[0] == "numpy":
        kind = next(base for base in kind.__mro__ if base.__module__ == "builtins")
    return kind.__name__


def error(exception: BaseException) -> dict[str, Any]:
    found = {"error": _kind(exception)}
    if getattr(exception, "has_reductions", False):
        found["has_reductions"] = True
    return found


def attempt(function, *args, **kwargs) -> Any:
    try:
        return function(*args, **kwargs)
    except Exception as exception:  # noqa: BLE001 - what raises is part of what is compared
        return error(exception)


def number(value: Any) -> float | str | None:
    """A JSON number; non-finite values as the strings "nan", "inf", "-inf"."""
    if value is None:
        return None
    value = float(np.asarray(value, dtype=np.float64).reshape(-1)[0])
    return value if math.isfinite(value) else str(value)


def array(value: Any) -> dict[str, Any]:
    values = np.asarray(value)
    summary: dict[str, Any] = {"shape": list(values.shape)}
    flat = values.reshape(-1)
    if values.dtype.kind in "fiub":
        flat = flat.astype(np.float64)
        if flat.size <= LISTED_ELEMENTS:
            summary["values"] = [number(item) for item in flat]
        else:
            summary["sum"], summary["l2"] = number(flat.sum()), number(np.sqrt(np.square(flat).sum()))
            summary["head"] = [number(item) for item in flat[:16]]
    else:
        summary["values"] = [str(item) for item in flat[:LISTED_ELEMENTS]]
    return summary


def _modes():
    from smdebug import modes

    return {name: getattr(modes, name) for name in MODE_NAMES}


def describe(trial, probe: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything ``trial`` reads back, as plain JSON (see the module docstring)."""
    probe = probe or {}
    modes = _modes()
    found: dict[str, Any] = {}
    found["steps"] = {name: attempt(trial.steps, mode=mode) for name, mode in modes.items()}
    present = sorted(mode.name for mode in trial.modes())
    found["modes"] = present
    global_steps = trial.steps()
    found["mode_of_step"] = {str(step): _mode_and_step(trial, step) for step in global_steps}
    found["global_step"] = {
        name: {str(step): attempt(trial.global_step, modes[name], step) for step in trial.steps(mode=modes[name])}
        for name in present
    }
    found["workers"] = attempt(lambda: sorted(trial.workers()))
    found["tensor_names"] = trial.tensor_names()
    found["tensor_names_by_mode"] = {name: attempt(trial.tensor_names, mode=modes[name]) for name in present}
    found["tensor_names_at_step"] = {str(step): attempt(trial.tensor_names, step=step) for step in global_steps}
    for name in present:
        mode_steps = trial.steps(mode=modes[name])
        if mode_steps:
            found.setdefault("tensor_names_at_mode_step", {})[name] = {
                str(step): attempt(trial.tensor_names, step=step, mode=modes[name]) for step in mode_steps[:2]
            }
    collections = sorted(trial.collections())
    found["collections"] = collections
    found["collection_tensors"] = {name: attempt(trial.tensor_names, collection=name) for name in collections}
    found["collection_include_regex"] = {
        name: attempt(lambda name=name: sorted(trial.collection(name).include_regex)) for name in collections
    }
    found["regex"] = {pattern: attempt(trial.tensor_names, regex=pattern) for pattern in probe.get("regex", [])}
    last = global_steps[-1] if global_steps else 0
    checked = sorted({0, last, last + 1, last + 100, *probe.get("has_passed_step", [])})
    found["has_passed_step"] = {str(step): attempt(lambda step=step: trial.has_passed_step(step).name) for step in checked}
    found["tensors"] = {name: _tensor(trial, name, present, modes) for name in found["tensor_names"]}
    if "rule" in probe:
        found["rule"] = run_rule(trial, probe["rule"])
    return found


def _mode_and_step(trial, step: int) -> list[Any]:
    mode, mode_step = trial.mode(step), trial.mode_step(step)
    return [getattr(mode, "name", mode), mode_step]


def _tensor(trial, name: str, present: list[str], modes: dict[str, Any]) -> dict[str, Any]:
    tensor = trial.tensor(name)
    found: dict[str, Any] = {"steps": {mode: attempt(tensor.steps, mode=modes[mode]) for mode in ["GLOBAL", *present]}}
    at = {}
    for step in tensor.steps():
        at[str(step)] = {
            "value": attempt(lambda step=step: array(tensor.value(step))),
            "reduction_values": attempt(lambda step=step: _saved_reductions(tensor.reduction_values(step))),
            "reductions": {
                f"abs_{reduction}" if absolute else reduction: attempt(
                    lambda step=step, reduction=reduction, absolute=absolute: number(
                        tensor.reduction_value(step, reduction, abs=absolute)
                    )
                )
                for reduction, absolute in READ_REDUCTIONS
            },
            "shape": attempt(lambda step=step: [int(size) for size in tensor.shape(step)]),
        }
    found["at"] = at
    for mode in present:
        mode_steps = attempt(tensor.steps, mode=modes[mode])
        if isinstance(mode_steps, list) and mode_steps:
            found.setdefault("values_by_mode", {})[mode] = attempt(
                lambda mode=mode: sorted(int(step) for step in tensor.values(mode=modes[mode]))
            )
    steps = tensor.steps()
    if steps:
        first, last = steps[0], steps[-1]
        found["prev_steps"] = {
            f"{last},2": attempt(tensor.prev_steps, last, 2),
            f"{last},1": attempt(tensor.prev_steps, last, 1),
            f"{last + 1},2": attempt(tensor.prev_steps, last + 1, 2),
            f"{first},3": attempt(tensor.prev_steps, first, 3),
        }
        found["workers"] = attempt(lambda: sorted(tensor.workers(last)))
    return found


def _saved_reductions(values: dict) -> dict[str, Any]:
    return {f"abs_{name}" if absolute else name: number(value) for (name, absolute), value in sorted(values.items())}


# --------------------------------------------------------------------------- a custom rule, by invoke_rule


def run_rule(trial, spec: dict[str, Any]) -> dict[str, Any]:
    """Build the rule class ``spec["class"]`` from module ``spec["module"]`` (the case's folder is on sys.path) with
    ``spec["params"]``, and run it with ``invoke_rule`` from ``start_step`` to ``end_step``: the steps
    ``invoke_at_step`` was called at, what it required there, where it returned True, and how invoke_rule ended."""
    from smdebug.rules.rule_invoker import invoke_rule

    rule_class = getattr(importlib.import_module(spec["module"]), spec["class"])
    record: dict[str, Any] = {"invoked": [], "met": [], "required": {}}

    class Recording(rule_class):
        def invoke_at_step(self, step):
            record["invoked"].append(step)
            required = {name: sorted(self.req_tensors.get_tensor_steps(name)) for name in self.req_tensors.get_names()}
            if required:
                record["required"][str(step)] = required
            met = super().invoke_at_step(step)
            if met:
                record["met"].append(step)
            return met

    Recording.__name__ = rule_class.__name__
    try:
        rule = Recording(trial, **spec.get("params", {}))
    except Exception as exception:  # noqa: BLE001
        record["constructed"] = error(exception)
        return record
    record["constructed"] = True
    try:
        invoke_rule(rule, start_step=spec.get("start_step", 0), end_step=spec.get("end_step"), raise_eval_cond=False)
        record["ended_with"] = None
    except Exception as exception:  # noqa: BLE001 - NoMoreData ends a rule run over the whole trial
        record["ended_with"] = error(exception)
        if hasattr(exception, "last_step"):
            record["ended_with"]["step"], record["ended_with"]["last_step"] = exception.step, exception.last_step
    return record


# --------------------------------------------------------------------------- live reading


def follow(path: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Follow a run while it is written (docs/analysis.md, wait_for_steps): wait for each step of ``spec["mode"]`` in
    turn and read ``spec["tensor"]`` there, until NoMoreData; then what has_passed_step says past the end."""
    from smdebug.exceptions import NoMoreData
    from smdebug.trials import create_trial

    mode = _modes()[spec.get("mode", "GLOBAL")]
    trial = create_trial(path)
    found: dict[str, Any] = {"values": {}}
    step = 0
    while step < spec.get("at_most", 1000):
        try:
            trial.wait_for_steps([step], mode=mode)
        except NoMoreData as end:
            found["no_more_data"] = {"step": end.step, "last_step": end.last_step}
            break
        except Exception as exception:  # noqa: BLE001
            found["ended_with"] = error(exception)
            break
        found["values"][str(step)] = attempt(lambda step=step: number(trial.tensor(spec["tensor"]).value(step, mode=mode)))
        step += 1
    found["after_end"] = attempt(lambda: trial.has_passed_step(step + 5, mode=mode).name)
    found["steps"] = trial.steps(mode=mode)
    return found
