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
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS, DOCUMENTED_RULE_NAMES
from contracts.debugger_settings import BY_FIELD, DEBUGGER_SETTINGS
from contracts.hyperparameter_values import (
    INTEGER,
    REAL,
    Value,
    describe_kind,
    fits_kind,
    infer_kinds,
    is_number,
    kind_of,
    kind_of_value,
    same_kind,
    show,
)
from contracts.objective_reach import RULE_NAME as REACH_RULE_NAME
from contracts.remedy_changes import (
    DEBUGGER,
    DIVIDE_BY_TARGET_SCALE,
    MEASURED_OPERATIONS,
    OPERATIONS,
    TO_BEST_EPOCH,
    Change,
)
from contracts.remedy_condition_parsing import parse_condition
from contracts.remedy_conditions import HYPERPARAMETER_TESTS, Condition
from contracts.situation import Situation
from contracts.suggestions import did_you_mean

ANY_RULE = "*"
#: The job completed, no rule fired, but the objective's metric missed its target.
OBJECTIVE_MISSED = "objective_missed"
#: The training process ran out of memory (the kernel killed it, or the framework raised OutOfMemoryError).
OUT_OF_MEMORY = "out_of_memory"
#: The data is wrong (NaN inputs or targets, labels outside the model's classes): no hyperparameter fixes that.
DATA_ERROR = "data_error"
#: A training batch of one sample reached a normalization layer that needs two (contracts.job.BATCH_OF_ONE_FAILURE).
BATCH_OF_ONE = "batch_of_one"
FAILURE_KINDS = {
    OBJECTIVE_MISSED: "the job completed with quiet rules but missed the objective",
    OUT_OF_MEMORY: "the training process ran out of memory",
    BATCH_OF_ONE: "a training batch of one sample reached a batch-norm layer, which needs two or more: the training "
    "set's size leaves one sample in its last batch (drop_last=True in the script's DataLoader, or another batch "
    "size, avoids it)",
    DATA_ERROR: "the data is wrong (NaN inputs or targets, labels outside the model's classes); fix the data",
}
#: Failure kinds no remedy may answer: the run ends at once, without a relaunch.
NOT_REMEDIABLE = (DATA_ERROR,)

MAX_REMEDIES_PER_KEY = 12
#: The declaration travels in the workflow state (Step Functions caps it at 256 KiB).
MAX_REMEDIES_JSON_BYTES = 8192
MAX_NAME_LENGTH = 64
MAX_NOTE_LENGTH = 400

# --------------------------------------------------------------------------- remedies


@dataclasses.dataclass(frozen=True)
class Remedy:
    change: Change
    also: tuple[Change, ...] = ()
    when: Condition = Condition()
    name: str = ""
    note: str = ""
    #: The next job starts from the failed job's checkpoints (SageMaker's CheckpointConfig: the script resumes
    #: from what it finds there) instead of from step 0. For changes a saved model and optimizer survive: a
    #: learning rate, regularisation, early stopping; not an architecture change.
    resume: bool = False

    @property
    def label(self) -> str:
        return self.name or self.change.describe()[:MAX_NAME_LENGTH]

    def changes(self) -> tuple[Change, ...]:
        return (self.change, *self.also)

    def settings(self) -> tuple[str, ...]:
        """The settings it changes (hyperparameters by name, debugger settings by run_spec field)."""
        return tuple(change.setting for change in self.changes())

    @property
    def changes_the_loss(self) -> bool:
        """Whether it changes a debugger setting: how the job computes the script's training loss."""
        return any(change.target == DEBUGGER for change in self.changes())

    def apply(self, settings: Mapping[str, Value], situation: Situation | None = None) -> dict[str, Value] | None:
        """The job's settings (hyperparameters and debugger settings) after the remedy, or None when its main change
        does not apply. The ``also`` changes are made where they apply. ``situation``: the failed job's evidence, for
        a change that reads it (``to_best_epoch``)."""
        measured = _measured(situation)
        new_value = self.change.apply(settings[self.change.setting], *measured)
        if new_value is None or _above_ceiling(self.change.setting, new_value, situation):
            return None
        updated = dict(settings)
        updated[self.change.setting] = new_value
        for change in self.also:
            value = change.apply(updated[change.setting], *measured)
            if value is not None and not _above_ceiling(change.setting, value, situation):
                updated[change.setting] = value
        return updated

    def why_not(self, settings: Mapping[str, Value], situation: Situation | None = None) -> str:
        """Why its main change does not apply, with the numbers: a ceiling the run's history set first."""
        current = settings[self.change.setting]
        new_value = self.change.apply(current, *_measured(situation))
        if new_value is not None and _above_ceiling(self.change.setting, new_value, situation):
            ceiling = situation.ceiling_for(self.change.setting)
            return f"{self.change.label} {show(current)} -> {show(new_value)} would be {ceiling.describe()}"
        return self.change.why_not(current)

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
        if self.resume:
            data["resume"] = True
        return data


def _measured(situation: Situation | None) -> tuple[int | None, float | None, float | None]:
    """What the measured operations read from the failed job: its best epoch, its targets' scale under a squared
    error, its total gradient norm's typical size."""
    if situation is None:
        return None, None, None
    return situation.best_epoch, situation.step_target_scale, situation.typical_gradient_norm


def _above_ceiling(setting: str, value: Value, situation: Situation | None) -> bool:
    """Whether ``value`` is at or above a rate the run's history showed too high for ``setting``."""
    ceiling = situation.ceiling_for(setting) if situation is not None else None
    return ceiling is not None and is_number(value) and value >= ceiling.value


Remedies = dict[str, tuple[Remedy, ...]]


def remedy_keys() -> tuple[str, ...]:
    # ObjectiveOutOfReach's stop is a quiet miss caught early: the objective_missed remedies answer it
    rules = tuple(
        name for name in dict.fromkeys((*BUILTIN_RULE_DEFAULTS, *DOCUMENTED_RULE_NAMES)) if name != REACH_RULE_NAME
    )
    return (*rules, *FAILURE_KINDS, ANY_RULE)


def parse_remedies(
    value: Any,
    hyperparameters: Mapping[str, Value],
    where: str = "remedies",
    *,
    check_reachable: bool = True,
    check_size: bool = True,
    kinds: Mapping[str, str] | None = None,
) -> Remedies:
    """Parse and check a declaration against the run's starting hyperparameters. Raises ContractError.

    ``check_reachable`` also rejects a remedy that can never apply from this start (for a declaration
    the user wrote; a built-in policy may hold rungs a start has already passed, as the AWS sample's
    ladder skips "add batch norm" when it is on). ``check_size`` caps a declaration that travels in the
    workflow state (a built-in set is code, not state). ``kinds``: what each hyperparameter is
    (``contracts.hyperparameter_values.infer_kinds``; left out: inferred from the names and values alone)."""
    kinds = dict(kinds) if kinds is not None else infer_kinds(hyperparameters)
    if not isinstance(value, Mapping):
        raise ContractError(where, "must be a JSON object of rule name or failure kind: [remedies in order]")
    size = len(json.dumps(value, default=str))
    if check_size and size > MAX_REMEDIES_JSON_BYTES:
        raise ContractError(where, f"takes {size} bytes of JSON; at most {MAX_REMEDIES_JSON_BYTES}")
    keys = remedy_keys()
    parsed: Remedies = {}
    for key, entries in value.items():
        if key == REACH_RULE_NAME:
            raise ContractError(
                f"{where}.{key}",
                f"takes no remedies of its own: a job it stops is planned as a missed objective; declare them under "
                f"{OBJECTIVE_MISSED!r}",
            )
        if key not in keys:
            raise ContractError(
                f"{where}.{key}", f"is not a built-in rule or failure kind{did_you_mean(key, keys)}; allowed: {', '.join(keys)}"
            )
        if not isinstance(entries, list):
            raise ContractError(f"{where}.{key}", "must be a JSON list of remedies, tried in order")
        if key in NOT_REMEDIABLE and entries:
            raise ContractError(
                f"{where}.{key}", f"takes no remedies: {FAILURE_KINDS[key]}; the run ends at once when it happens"
            )
        if check_size and len(entries) > MAX_REMEDIES_PER_KEY:  # a declaration's cap; a built-in set is code
            raise ContractError(f"{where}.{key}", f"has {len(entries)} remedies; at most {MAX_REMEDIES_PER_KEY}")
        parsed[key] = tuple(
            _parse_remedy(entry, hyperparameters, kinds, f"{where}.{key}[{index}]")
            for index, entry in enumerate(entries)
        )
    if check_reachable:
        _check_reachable(parsed, hyperparameters, where)
    return parsed


def value_key(value: Value) -> str:
    """How a conventional value is named in a value map (``hyperparameter_names``' ``values``): true/false, or the
    value as text."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def adapt_to_script(
    preset: Mapping[str, Sequence[Mapping[str, Any]]],
    names: Mapping[str, str],
    hyperparameters: Mapping[str, Value],
    values: Mapping[str, Mapping[str, Value]] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """A built-in remedy set, written on conventional names (learning_rate, grad_clip, ...), for a script's own
    hyperparameters: each name renamed through ``names`` (conventional -> the script's, e.g. learning_rate ->
    lr), and every remedy, ``also`` change or condition on a hyperparameter the run does not have left out.
    Rules left with no remedy are left out. A script's name that ``names`` gives another conventional name stands for
    that one only: XGBoost's ``{"eta": "learning_rate"}`` keeps the networks' learning-rate remedies off it.

    ``values``: for a conventional name whose values the script spells its own way, conventional value (as
    :func:`value_key` names it) -> the script's (``{"add_batch_norm": {"true": "batch", "false": "none"}}``): a
    remedy's value and a condition's are translated; one the map does not name is a value the script does not take,
    so the remedy (or its ``also`` change) is left out."""
    values = values or {}
    claimed = {own for conventional, own in names.items() if own != conventional}

    def rename(name: str) -> str | None:
        if name in names:
            return names[name]
        return None if name in claimed else name

    def translated(conventional: str, value: Value) -> tuple[bool, Value]:
        """(the script takes it, the script's spelling)."""
        spelled = values.get(conventional)
        if spelled is None:
            return True, value
        key = value_key(value)
        return (key in spelled, spelled.get(key))

    def change(entry: Mapping[str, Any]) -> dict[str, Any] | None:
        if "debugger_setting" in entry:  # the product's own settings: no script name
            return dict(entry)
        conventional = entry["hyperparameter"]
        renamed = {**entry, "hyperparameter": rename(conventional)}
        if "set_to" in entry:
            takes, spelled = translated(conventional, entry["set_to"])
            if not takes:
                return None
            renamed["set_to"] = spelled
        return renamed

    def present(entry: Mapping[str, Any] | None) -> bool:
        if entry is None:
            return False
        if "debugger_setting" in entry:
            setting = DEBUGGER_SETTINGS.get(entry["debugger_setting"])
            return setting is not None and setting.field in hyperparameters
        return entry["hyperparameter"] in hyperparameters

    adapted: dict[str, list[dict[str, Any]]] = {}
    for key, entries in preset.items():
        kept = []
        for entry in entries:
            main = change(entry)
            if not present(main):
                continue
            when = dict(entry.get("when", {}))
            applies = True
            for test in HYPERPARAMETER_TESTS:
                if test in when:
                    renamed = {}
                    for name, value in when[test].items():
                        takes, spelled = translated(name, value) if test == "hyperparameters" else (True, value)
                        applies = applies and takes
                        renamed[rename(name)] = spelled
                    applies = applies and all(name in hyperparameters for name in renamed)
                    when[test] = renamed
            if not applies:  # a condition on a knob the script lacks never holds
                continue
            also = [change(item) for item in entry.get("also", [])]
            main["also"] = [item for item in also if present(item)]
            if not main["also"]:
                del main["also"]
            if when:
                main["when"] = when
            kept.append(main)
        if kept:
            adapted[key] = kept
    return adapted


def remedies_to_json(remedies: Remedies) -> dict[str, list[dict[str, Any]]]:
    return {key: [remedy.to_json() for remedy in entries] for key, entries in remedies.items()}


_BOUND_KEYS = ("min", "max", "above", "below")
_TARGET_KEYS = ("hyperparameter", "debugger_setting")
_REMEDY_KEYS = {*_TARGET_KEYS, *OPERATIONS, *_BOUND_KEYS, "also", "when", "name", "note", "resume"}
_CHANGE_KEYS = {*_TARGET_KEYS, *OPERATIONS, *_BOUND_KEYS}


def _parse_remedy(entry: Any, hyperparameters: Mapping[str, Value], kinds: Mapping[str, str], where: str) -> Remedy:
    if not isinstance(entry, Mapping):
        raise ContractError(where, 'must be an object such as {"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-5}')
    for key in entry:
        if key not in _REMEDY_KEYS:
            raise ContractError(f"{where}.{key}", f"is not a remedy key{did_you_mean(key, _REMEDY_KEYS)}; allowed: {', '.join(sorted(_REMEDY_KEYS))}")
    change = _parse_change(entry, hyperparameters, kinds, where)
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
                raise ContractError(f"{item_where}.{key}", f"is not a change key{did_you_mean(key, _CHANGE_KEYS)}; allowed: {', '.join(sorted(_CHANGE_KEYS))}")
        also.append(_parse_change(item, hyperparameters, kinds, item_where))
    name = entry.get("name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH:
        raise ContractError(f"{where}.name", f"must be a string of at most {MAX_NAME_LENGTH} characters")
    note = entry.get("note", "")
    if not isinstance(note, str) or len(note) > MAX_NOTE_LENGTH:
        raise ContractError(f"{where}.note", f"must be a string of at most {MAX_NOTE_LENGTH} characters")
    when = parse_condition(entry.get("when", {}), hyperparameters, f"{where}.when", kinds)
    resume = entry.get("resume", False)
    if not isinstance(resume, bool):
        raise ContractError(f"{where}.resume", f"must be true or false (got {resume!r})")
    return Remedy(change=change, also=tuple(also), when=when, name=name, note=note, resume=resume)


def _parse_change(
    entry: Mapping[str, Any], hyperparameters: Mapping[str, Value], kinds: Mapping[str, str], where: str
) -> Change:
    targets = [key for key in _TARGET_KEYS if key in entry]
    if len(targets) > 1:
        raise ContractError(where, "names both a hyperparameter and a debugger_setting; a change sets one of them")
    if targets == ["debugger_setting"]:
        name = _debugger_field(entry["debugger_setting"], hyperparameters, f"{where}.debugger_setting")
    else:
        name = entry.get("hyperparameter")
    if not isinstance(name, str) or not name:
        raise ContractError(
            f"{where}.hyperparameter",
            "is required: the name of the hyperparameter to change (or debugger_setting: one of "
            f"{', '.join(DEBUGGER_SETTINGS)})",
        )
    if targets != ["debugger_setting"] and name in BY_FIELD:
        raise ContractError(
            f"{where}.hyperparameter", f"{name} is a debugger setting, not a hyperparameter: write "
            f'"debugger_setting": "{BY_FIELD[name].name}"'
        )
    if name not in hyperparameters:
        known = ", ".join(sorted(key for key in hyperparameters if key not in BY_FIELD)) or "none"
        raise ContractError(
            f"{where}.hyperparameter",
            f"{name!r} is not in run_spec.hyperparameters{did_you_mean(name, hyperparameters)} (known: {known}); add it "
            "there with its starting value",
        )
    operations = [key for key in OPERATIONS if key in entry]
    if len(operations) != 1:
        raise ContractError(where, f"needs exactly one operation of {', '.join(OPERATIONS)} (got {operations or 'none'})")
    operation = operations[0]
    operand = entry[operation]
    if name in BY_FIELD:
        values = BY_FIELD[name].values
        if operation != "set_to" or operand not in values:
            raise ContractError(
                f"{where}.{operation}", f"a debugger setting takes set_to one of {', '.join(values)} (got {operation} "
                f"{operand!r})"
            )
    current = hyperparameters[name]
    kind = kinds.get(name) or kind_of_value(current)
    if operation == TO_BEST_EPOCH:
        if operand is not True:
            raise ContractError(f"{where}.{operation}", f"must be true (got {operand!r})")
        if kind != INTEGER:
            raise ContractError(
                f"{where}.{operation}", f"{name} is {describe_kind(kind)} ({show(current)!r}); an epoch count is a whole number"
            )
    elif operation == DIVIDE_BY_TARGET_SCALE:
        if operand is not True:
            raise ContractError(f"{where}.{operation}", f"must be true (got {operand!r})")
        if kind != REAL:
            raise ContractError(
                f"{where}.{operation}", f"{name} is {describe_kind(kind)} ({show(current)!r}); only a real number is divided"
            )
    elif operation == "set_to":
        fits = is_number(operand) if kind in (INTEGER, REAL) else fits_kind(operand, kind)
        if not isinstance(operand, (str, int, float, bool)) or not fits:
            raise ContractError(
                f"{where}.set_to",
                f"must be {describe_kind(kind)} like {name}'s starting value {show(current)!r} (got {kind_of(operand)} "
                f"{show(operand)!r})",
            )
    else:
        if kind not in (INTEGER, REAL):
            raise ContractError(
                f"{where}.{operation}",
                f"{name} is {describe_kind(kind)} ({show(current)!r}); {operation} needs a number",
            )
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
            if kind not in (INTEGER, REAL):
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
    return Change(
        name, operation, operand, bounds.get("min"), bounds.get("max"), bounds.get("above"), bounds.get("below"), kind
    )


def _debugger_field(name: Any, settings: Mapping[str, Value], where: str) -> str:
    """The run_spec field of the debugger setting a remedy names; ContractError when there is none, or when the run's
    jobs do not have it (the loss settings are PyTorch's)."""
    setting = DEBUGGER_SETTINGS.get(name) if isinstance(name, str) else None
    if setting is None:
        raise ContractError(
            where, f"{name!r} is not a debugger setting{did_you_mean(str(name), DEBUGGER_SETTINGS)}; allowed: "
            f"{', '.join(DEBUGGER_SETTINGS)}"
        )
    if setting.field not in settings:
        raise ContractError(where, f"{name} is a setting of the debugger in PyTorch jobs; this run's framework has none")
    return setting.field


def _check_reachable(remedies: Remedies, hyperparameters: Mapping[str, Value], where: str) -> None:
    """A remedy whose main change cannot apply to the starting value, when no other declared change moves that
    hyperparameter, can never apply: say so before anything is launched."""
    changers: dict[str, set[tuple[str, int]]] = {}
    for key, entries in remedies.items():
        for index, remedy in enumerate(entries):
            for change in remedy.changes():
                changers.setdefault(change.setting, set()).add((key, index))
    for key, entries in remedies.items():
        for index, remedy in enumerate(entries):
            name = remedy.change.setting
            others = changers.get(name, set()) - {(key, index)}
            if others:
                continue
            start = hyperparameters[name]
            if remedy.change.operation in MEASURED_OPERATIONS:  # what it sets comes from a job's evidence
                continue
            if remedy.change.apply(start) is None:
                raise ContractError(
                    f"{where}.{key}[{index}]",
                    f"can never apply: {remedy.change.why_not(start)}, and no other remedy changes {name}",
                )


__all__: Sequence[str] = (
    "ANY_RULE",
    "DATA_ERROR",
    "NOT_REMEDIABLE",
    "adapt_to_script",
    "show",
    "same_kind",
    "OBJECTIVE_MISSED",
    "OUT_OF_MEMORY",
    "FAILURE_KINDS",
    "Change",
    "Condition",
    "Remedy",
    "Remedies",
    "parse_remedies",
    "remedies_to_json",
)
