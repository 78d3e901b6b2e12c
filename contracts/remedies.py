"""Remedies declared on the training script's own hyperparameters. Standard library only.

A run_spec says, per debugger rule (or failure kind), what the planner may
change, in order and within bounds::

    "remedies": {
      "ExplodingTensor": [
        {"hyperparameter": "grad_clip", "set_to": 1.0},
        {"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-5}
      ],
      "objective_missed": [{"hyperparameter": "epochs", "multiply_by": 2, "max": 40}],
      "*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-5}]
    }

Keys: a built-in rule's name, a failure kind (:data:`FAILURE_KINDS`), or ``"*"``
for any rule without its own list. Each entry changes one hyperparameter with
one operation (:data:`OPERATIONS`); ``also`` lists further changes made with
it; ``when`` limits it to situations the debugger's evidence shows
(:class:`Condition`); ``name`` and ``note`` are for the reasons the planner
writes. The planner takes the first entry, in order, whose condition holds and
whose change applies: a change whose result would leave its ``min``/``max``
bounds (inclusive), or would not change the value, does not apply.

:func:`parse_remedies` checks a declaration against the run's hyperparameters
before anything is launched: an unknown hyperparameter, a bound the wrong way
round, an operation that does not fit the value's type, or a remedy that can
never apply is a :class:`contracts.ContractError` naming it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from contracts import ContractError
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS

ANY_RULE = "*"
#: The job completed, no rule fired, but the objective's metric missed its target.
OBJECTIVE_MISSED = "objective_missed"
#: The training process ran out of memory (the kernel killed it, or the framework raised OutOfMemoryError).
OUT_OF_MEMORY = "out_of_memory"
FAILURE_KINDS = {
    OBJECTIVE_MISSED: "the job completed with quiet rules but missed the objective",
    OUT_OF_MEMORY: "the training process ran out of memory",
}

OPERATIONS = ("set_to", "multiply_by", "add", "at_most", "at_least")
NUMERIC_OPERATIONS = ("multiply_by", "add", "at_most", "at_least")
PHASES = ("warmup", "main")
LOSS_TRENDS = ("rising", "falling")
#: Without steps_per_epoch in the evidence, an issue before this step counts as "early".
EARLY_STEP_FALLBACK = 10
MAX_REMEDIES_PER_KEY = 12
#: The declaration travels in the workflow state (Step Functions caps it at 256 KiB).
MAX_REMEDIES_JSON_BYTES = 8192
MAX_NAME_LENGTH = 64
MAX_NOTE_LENGTH = 400

Value = str | int | float | bool


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same_kind(a: Any, b: Any) -> bool:
    """Values a remedy may swap: booleans for booleans, numbers for numbers, strings for strings."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b)
    return type(a) is type(b)


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


# --------------------------------------------------------------------------- changes


@dataclasses.dataclass(frozen=True)
class Change:
    """One hyperparameter, one operation, optional inclusive bounds on the result."""

    hyperparameter: str
    operation: str
    operand: Value
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None

    def result(self, current: Value) -> Value:
        """The value after the operation (integers stay integers), whether or not it applies."""
        operand = self.operand
        if self.operation == "set_to":
            return operand
        if self.operation == "multiply_by":
            new = current * operand
        elif self.operation == "add":
            new = current + operand
        elif self.operation == "at_most":
            new = min(current, operand)
        else:  # at_least
            new = max(current, operand)
        if isinstance(current, int) and not isinstance(current, bool):
            return int(round(new))
        return float(new)

    def apply(self, current: Value) -> Value | None:
        """The new value, or None when the change does not apply (no change, or outside its bounds)."""
        new = self.result(current)
        if new == current:
            return None
        if self.minimum is not None and new < self.minimum:
            return None
        if self.maximum is not None and new > self.maximum:
            return None
        if self.above is not None and not new > self.above:
            return None
        if self.below is not None and not new < self.below:
            return None
        return new

    def describe(self) -> str:
        """'multiply lr by 0.5 (not below 1e-05)'."""
        verbs = {
            "set_to": f"set {self.hyperparameter} to {show(self.operand)}",
            "multiply_by": f"multiply {self.hyperparameter} by {show(self.operand)}",
            "add": f"add {show(self.operand)} to {self.hyperparameter}",
            "at_most": f"cap {self.hyperparameter} at {show(self.operand)}",
            "at_least": f"raise {self.hyperparameter} to at least {show(self.operand)}",
        }
        bounds = []
        if self.minimum is not None:
            bounds.append(f"not below {show(self.minimum)}")
        if self.maximum is not None:
            bounds.append(f"not above {show(self.maximum)}")
        if self.above is not None:
            bounds.append(f"while it stays above {show(self.above)}")
        if self.below is not None:
            bounds.append(f"while it stays below {show(self.below)}")
        return verbs[self.operation] + (f" ({', '.join(bounds)})" if bounds else "")

    def why_not(self, current: Value) -> str:
        """Why it does not apply to ``current``, with the numbers."""
        new = self.result(current)
        if new == current:
            return f"{self.hyperparameter} is already {show(current)}"
        if self.minimum is not None and new < self.minimum:
            return f"{self.hyperparameter} {show(current)} -> {show(new)} would be below {show(self.minimum)}"
        if self.maximum is not None and new > self.maximum:
            return f"{self.hyperparameter} {show(current)} -> {show(new)} would be above {show(self.maximum)}"
        if self.above is not None and not new > self.above:
            return f"{self.hyperparameter} {show(current)} -> {show(new)} would be <= {show(self.above)}"
        if self.below is not None and not new < self.below:
            return f"{self.hyperparameter} {show(current)} -> {show(new)} would be >= {show(self.below)}"
        return f"{self.hyperparameter} {show(current)} -> {show(new)} applies"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"hyperparameter": self.hyperparameter, self.operation: self.operand}
        if self.minimum is not None:
            data["min"] = self.minimum
        if self.maximum is not None:
            data["max"] = self.maximum
        if self.above is not None:
            data["above"] = self.above
        if self.below is not None:
            data["below"] = self.below
        return data


# --------------------------------------------------------------------------- conditions


@dataclasses.dataclass(frozen=True)
class Situation:
    """What the debugger's evidence says about the failure, as conditions read it."""

    issue_step: int | None = None
    steps_per_epoch: int | None = None
    phase: str | None = None
    initial_gradient_norm: float | None = None
    initial_loss: float | None = None
    last_finite_loss: float | None = None

    @property
    def early(self) -> bool | None:
        if self.issue_step is None:
            return None
        return self.issue_step < self.early_limit

    @property
    def early_limit(self) -> float:
        return self.steps_per_epoch / 2 if self.steps_per_epoch else EARLY_STEP_FALLBACK

    @property
    def loss_trend(self) -> str | None:
        if self.initial_loss is None or self.last_finite_loss is None:
            return None
        return "rising" if self.last_finite_loss >= self.initial_loss else "falling"


@dataclasses.dataclass(frozen=True)
class Condition:
    """All given tests must hold. Empty: always."""

    phase: str | None = None
    early: bool | None = None
    initial_gradient_norm_above: float | None = None
    loss: str | None = None
    hyperparameters: tuple[tuple[str, Value], ...] = ()

    def check(self, situation: Situation, hyperparameters: Mapping[str, Value]) -> tuple[bool, list[str]]:
        """(holds, the facts behind it with their numbers) for the reason the planner writes."""
        facts: list[str] = []
        if self.phase is not None:
            if situation.phase != self.phase:
                return False, []
            facts.append(f"it happened in the {self.phase} phase")
        if self.early is not None:
            if situation.early is None or situation.early != self.early:
                return False, []
            limit = show(situation.early_limit)
            where = f"at step {situation.issue_step}"
            facts.append(f"{where}, before step {limit}" if self.early else f"{where}, after step {limit}")
        if self.initial_gradient_norm_above is not None:
            norm = situation.initial_gradient_norm
            if norm is None or not math.isfinite(norm) or norm <= self.initial_gradient_norm_above:
                return False, []
            facts.append(f"the initial gradient norm {show(norm)} is above {show(self.initial_gradient_norm_above)}")
        if self.loss is not None:
            if situation.loss_trend != self.loss:
                return False, []
            facts.append(
                f"the loss went from {show(situation.initial_loss)} to {show(situation.last_finite_loss)} ({self.loss})"
            )
        for name, value in self.hyperparameters:
            if hyperparameters.get(name) != value:
                return False, []
            facts.append(f"{name} is {show(value)}")
        return True, facts

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for key in ("phase", "early", "initial_gradient_norm_above", "loss"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.hyperparameters:
            data["hyperparameters"] = dict(self.hyperparameters)
        return data


# --------------------------------------------------------------------------- remedies


@dataclasses.dataclass(frozen=True)
class Remedy:
    change: Change
    also: tuple[Change, ...] = ()
    when: Condition = Condition()
    name: str = ""
    note: str = ""

    @property
    def label(self) -> str:
        return self.name or self.change.describe()[:MAX_NAME_LENGTH]

    def changes(self) -> tuple[Change, ...]:
        return (self.change, *self.also)

    def apply(self, hyperparameters: Mapping[str, Value]) -> dict[str, Value] | None:
        """The hyperparameters after the remedy, or None when its main change does not apply. The ``also``
        changes are made where they apply."""
        new_value = self.change.apply(hyperparameters[self.change.hyperparameter])
        if new_value is None:
            return None
        updated = dict(hyperparameters)
        updated[self.change.hyperparameter] = new_value
        for change in self.also:
            value = change.apply(updated[change.hyperparameter])
            if value is not None:
                updated[change.hyperparameter] = value
        return updated

    def to_json(self) -> dict[str, Any]:
        data = self.change.to_json()
        if self.also:
            data["also"] = [change.to_json() for change in self.also]
        when = self.when.to_json()
        if when:
            data["when"] = when
        if self.name:
            data["name"] = self.name
        if self.note:
            data["note"] = self.note
        return data


Remedies = dict[str, tuple[Remedy, ...]]


def remedy_keys() -> tuple[str, ...]:
    return (*BUILTIN_RULE_DEFAULTS, *FAILURE_KINDS, ANY_RULE)


def parse_remedies(
    value: Any, hyperparameters: Mapping[str, Value], where: str = "remedies", *, check_reachable: bool = True
) -> Remedies:
    """Parse and check a declaration against the run's starting hyperparameters. Raises ContractError.

    ``check_reachable`` also rejects a remedy that can never apply from this start (for a declaration
    the user wrote; a built-in policy may hold rungs a start has already passed, as the AWS sample's
    ladder skips "add batch norm" when it is on)."""
    if not isinstance(value, Mapping):
        raise ContractError(where, "must be a JSON object of rule name or failure kind: [remedies in order]")
    size = len(json.dumps(value, default=str))
    if size > MAX_REMEDIES_JSON_BYTES:
        raise ContractError(where, f"takes {size} bytes of JSON; at most {MAX_REMEDIES_JSON_BYTES}")
    keys = remedy_keys()
    parsed: Remedies = {}
    for key, entries in value.items():
        if key not in keys:
            raise ContractError(
                f"{where}.{key}", f"is not a built-in rule or failure kind; allowed: {', '.join(keys)}"
            )
        if not isinstance(entries, list):
            raise ContractError(f"{where}.{key}", "must be a JSON list of remedies, tried in order")
        if len(entries) > MAX_REMEDIES_PER_KEY:
            raise ContractError(f"{where}.{key}", f"has {len(entries)} remedies; at most {MAX_REMEDIES_PER_KEY}")
        parsed[key] = tuple(
            _parse_remedy(entry, hyperparameters, f"{where}.{key}[{index}]") for index, entry in enumerate(entries)
        )
    if check_reachable:
        _check_reachable(parsed, hyperparameters, where)
    return parsed


def remedies_to_json(remedies: Remedies) -> dict[str, list[dict[str, Any]]]:
    return {key: [remedy.to_json() for remedy in entries] for key, entries in remedies.items()}


_BOUND_KEYS = ("min", "max", "above", "below")
_REMEDY_KEYS = {"hyperparameter", *OPERATIONS, *_BOUND_KEYS, "also", "when", "name", "note"}
_CHANGE_KEYS = {"hyperparameter", *OPERATIONS, *_BOUND_KEYS}
_CONDITION_KEYS = ("phase", "early", "initial_gradient_norm_above", "loss", "hyperparameters")


def _parse_remedy(entry: Any, hyperparameters: Mapping[str, Value], where: str) -> Remedy:
    if not isinstance(entry, Mapping):
        raise ContractError(where, 'must be an object such as {"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-5}')
    for key in entry:
        if key not in _REMEDY_KEYS:
            raise ContractError(f"{where}.{key}", f"is not a remedy key; allowed: {', '.join(sorted(_REMEDY_KEYS))}")
    change = _parse_change(entry, hyperparameters, where)
    also_entries = entry.get("also", [])
    if not isinstance(also_entries, list):
        raise ContractError(f"{where}.also", "must be a JSON list of changes made together with this one")
    also = []
    for index, item in enumerate(also_entries):
        item_where = f"{where}.also[{index}]"
        if not isinstance(item, Mapping):
            raise ContractError(item_where, "must be an object such as {\"hyperparameter\": \"warmup\", \"at_most\": 0.1}")
        for key in item:
            if key not in _CHANGE_KEYS:
                raise ContractError(f"{item_where}.{key}", f"is not a change key; allowed: {', '.join(sorted(_CHANGE_KEYS))}")
        also.append(_parse_change(item, hyperparameters, item_where))
    name = entry.get("name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH:
        raise ContractError(f"{where}.name", f"must be a string of at most {MAX_NAME_LENGTH} characters")
    note = entry.get("note", "")
    if not isinstance(note, str) or len(note) > MAX_NOTE_LENGTH:
        raise ContractError(f"{where}.note", f"must be a string of at most {MAX_NOTE_LENGTH} characters")
    when = _parse_condition(entry.get("when", {}), hyperparameters, f"{where}.when")
    return Remedy(change=change, also=tuple(also), when=when, name=name, note=note)


def _parse_change(entry: Mapping[str, Any], hyperparameters: Mapping[str, Value], where: str) -> Change:
    name = entry.get("hyperparameter")
    if not isinstance(name, str) or not name:
        raise ContractError(f"{where}.hyperparameter", "is required: the name of the hyperparameter to change")
    if name not in hyperparameters:
        known = ", ".join(sorted(hyperparameters)) or "none"
        raise ContractError(
            f"{where}.hyperparameter",
            f"{name!r} is not in run_spec.hyperparameters (known: {known}); add it there with its starting value",
        )
    operations = [key for key in OPERATIONS if key in entry]
    if len(operations) != 1:
        raise ContractError(where, f"needs exactly one operation of {', '.join(OPERATIONS)} (got {operations or 'none'})")
    operation = operations[0]
    operand = entry[operation]
    current = hyperparameters[name]
    if operation == "set_to":
        if not isinstance(operand, (str, int, float, bool)) or not same_kind(operand, current):
            raise ContractError(
                f"{where}.set_to",
                f"must be of the same kind as {name}'s starting value {show(current)!r} "
                f"({_kind(current)}; got {_kind(operand)})",
            )
    else:
        if not is_number(current):
            raise ContractError(f"{where}.{operation}", f"{name} is {_kind(current)} {show(current)!r}; {operation} needs a number")
        if not is_number(operand) or not math.isfinite(operand):
            raise ContractError(f"{where}.{operation}", f"must be a finite number (got {operand!r})")
        if operation == "multiply_by" and operand <= 0:
            raise ContractError(f"{where}.multiply_by", f"must be > 0 (got {show(operand)})")
        if (operation == "multiply_by" and operand == 1) or (operation == "add" and operand == 0):
            raise ContractError(f"{where}.{operation}", f"{operation} {show(operand)} never changes {name}")
    bounds = {}
    for key in _BOUND_KEYS:
        if key in entry:
            bound = entry[key]
            if not is_number(bound) or not math.isfinite(bound):
                raise ContractError(f"{where}.{key}", f"must be a finite number (got {bound!r})")
            if not is_number(current):
                raise ContractError(f"{where}.{key}", f"{name} is not a number; bounds apply to numbers only")
            bounds[key] = float(bound)
    low_keys = [key for key in ("min", "above") if key in bounds]
    high_keys = [key for key in ("max", "below") if key in bounds]
    for low in low_keys:
        for high in high_keys:
            empty = bounds[low] > bounds[high] or (bounds[low] == bounds[high] and (low, high) != ("min", "max"))
            if empty:
                raise ContractError(
                    f"{where}.{low}",
                    f"{low} {show(bounds[low])} is not below {high} {show(bounds[high])}: the bounds are the wrong way round",
                )
    return Change(name, operation, operand, bounds.get("min"), bounds.get("max"), bounds.get("above"), bounds.get("below"))


def _parse_condition(value: Any, hyperparameters: Mapping[str, Value], where: str) -> Condition:
    if not isinstance(value, Mapping):
        raise ContractError(where, f"must be an object of conditions: {', '.join(_CONDITION_KEYS)}")
    for key in value:
        if key not in _CONDITION_KEYS:
            raise ContractError(f"{where}.{key}", f"is not a condition; allowed: {', '.join(_CONDITION_KEYS)}")
    phase = value.get("phase")
    if phase is not None and phase not in PHASES:
        raise ContractError(f"{where}.phase", f"must be one of {', '.join(PHASES)} (got {phase!r})")
    early = value.get("early")
    if early is not None and not isinstance(early, bool):
        raise ContractError(f"{where}.early", f"must be true or false (got {early!r})")
    norm = value.get("initial_gradient_norm_above")
    if norm is not None and (not is_number(norm) or not math.isfinite(norm) or norm < 0):
        raise ContractError(f"{where}.initial_gradient_norm_above", f"must be a number >= 0 (got {norm!r})")
    loss = value.get("loss")
    if loss is not None and loss not in LOSS_TRENDS:
        raise ContractError(f"{where}.loss", f"must be one of {', '.join(LOSS_TRENDS)} (got {loss!r})")
    equal = value.get("hyperparameters", {})
    if not isinstance(equal, Mapping):
        raise ContractError(f"{where}.hyperparameters", "must be an object of hyperparameter: value")
    for name, expected in equal.items():
        if name not in hyperparameters:
            raise ContractError(f"{where}.hyperparameters.{name}", f"{name!r} is not in run_spec.hyperparameters")
        if not same_kind(expected, hyperparameters[name]):
            raise ContractError(
                f"{where}.hyperparameters.{name}", f"must be {_kind(hyperparameters[name])} like its starting value"
            )
    return Condition(
        phase=phase,
        early=early,
        initial_gradient_norm_above=float(norm) if norm is not None else None,
        loss=loss,
        hyperparameters=tuple(equal.items()),
    )


def _check_reachable(remedies: Remedies, hyperparameters: Mapping[str, Value], where: str) -> None:
    """A remedy whose main change cannot apply to the starting value, when no other declared change moves that
    hyperparameter, can never apply: say so before anything is launched."""
    changers: dict[str, set[tuple[str, int]]] = {}
    for key, entries in remedies.items():
        for index, remedy in enumerate(entries):
            for change in remedy.changes():
                changers.setdefault(change.hyperparameter, set()).add((key, index))
    for key, entries in remedies.items():
        for index, remedy in enumerate(entries):
            name = remedy.change.hyperparameter
            others = changers.get(name, set()) - {(key, index)}
            if others:
                continue
            start = hyperparameters[name]
            if remedy.change.apply(start) is None:
                raise ContractError(
                    f"{where}.{key}[{index}]",
                    f"can never apply: {remedy.change.why_not(start)}, and no other remedy changes {name}",
                )


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


__all__: Sequence[str] = (
    "ANY_RULE",
    "OBJECTIVE_MISSED",
    "OUT_OF_MEMORY",
    "FAILURE_KINDS",
    "Change",
    "Condition",
    "Remedy",
    "Remedies",
    "Situation",
    "parse_remedies",
    "remedies_to_json",
)
