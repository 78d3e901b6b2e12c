"""How the differential harness compares: the two documents of a case (ours, smdebug 1.0.34's), the verdict on them
given the documented differences, and the table and sections of docs/smdebug-compatibility.md."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
from pathlib import Path
from typing import Any

from differential_cases import Case
from differential_differences import DIFFERENCES, Difference

#: Values and reductions agree when within these tolerances (ours reduces in float64, smdebug in the tensor's dtype).
RTOL, ATOL = 1e-5, 1e-7
DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "smdebug-compatibility.md"
TABLE_START, TABLE_END = "<!-- differential table: start -->", "<!-- differential table: end -->"
DIFFERENCES_START, DIFFERENCES_END = "<!-- differences: start -->", "<!-- differences: end -->"


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * abs(b)


def compare(ours: Any, smdebug: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, ours, smdebug) wherever the two documents differ; numbers within RTOL/ATOL are the same."""
    if isinstance(ours, dict) and isinstance(smdebug, dict):
        found = []
        for key in sorted(set(ours) | set(smdebug), key=str):
            where = f"{path}/{key}" if path else str(key)
            if key not in ours:
                found.append((where, "(absent)", smdebug[key]))
            elif key not in smdebug:
                found.append((where, ours[key], "(absent)"))
            else:
                found += compare(ours[key], smdebug[key], where)
        return found
    if isinstance(ours, list) and isinstance(smdebug, list):
        numbers = [(_as_number(a), _as_number(b)) for a, b in zip(ours, smdebug, strict=False)]
        if len(ours) == len(smdebug) and all(a is not None and b is not None for a, b in numbers):
            return [] if all(_close(a, b) for a, b in numbers) else [(path, ours, smdebug)]
        if len(ours) == len(smdebug) and all(isinstance(item, (dict, list)) for item in ours + smdebug):
            return [found for index, (a, b) in enumerate(zip(ours, smdebug, strict=True)) for found in compare(a, b, f"{path}/{index}")]
        return [] if ours == smdebug else [(path, ours, smdebug)]
    a, b = _as_number(ours), _as_number(smdebug)
    if a is not None and b is not None:
        return [] if _close(a, b) else [(path, ours, smdebug)]
    return [] if ours == smdebug else [(path, ours, smdebug)]


@dataclasses.dataclass
class Row:
    case: Case
    ours: str
    smdebug: str
    differences: list[tuple[str, Any, Any]]
    #: documented difference id -> the paths it explains
    documented: dict[str, list[str]]
    undocumented: list[tuple[str, Any, Any]]
    #: differences the case names that were not found
    stale: list[str]

    @property
    def ok(self) -> bool:
        return not self.undocumented and not self.stale

    @property
    def verdict(self) -> str:
        if not self.differences:
            return "same"
        if not self.ok:
            return "DIFFERENT (undocumented)" if self.undocumented else "same, but a documented difference is gone"
        own = sorted(key for key in self.documented if not DIFFERENCES[key].everywhere)
        general = sorted(key for key in self.documented if DIFFERENCES[key].everywhere)
        parts = []
        if own:
            parts.append("documented difference " + ", ".join(_link(key) for key in own))
        if general:
            parts.append(("same but for " if not own else "and ") + ", ".join(_link(key) for key in general))
        return "; ".join(parts)


def _link(key: str) -> str:
    return f"[{key}](#{key.lower()})"


def _matches(path: str, difference: Difference) -> bool:
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in difference.paths)


def classify(case: Case, documents: dict[str, dict[str, Any]]) -> Row:
    ours, smdebug = documents["ours"], documents["smdebug"]
    ignored = [pattern for pattern in case.not_compared]
    differences = [
        found for found in compare(ours, smdebug) if not any(fnmatch.fnmatchcase(found[0], pattern) for pattern in ignored)
    ]
    own = [DIFFERENCES[key] for key in case.differences if key in DIFFERENCES]
    general = [difference for difference in DIFFERENCES.values() if difference.everywhere and difference not in own]
    documented: dict[str, list[str]] = {}
    undocumented = []
    for found in differences:
        # the case's own differences first: one that explains the whole case ("*") leaves nothing to the general ones
        explained = [difference for difference in own if _matches(found[0], difference)]
        explained = explained or [difference for difference in general if _matches(found[0], difference)]
        for difference in explained:
            documented.setdefault(difference.id, []).append(found[0])
        if not explained:
            undocumented.append(found)
    stale = [key for key in case.differences if key not in documented]
    return Row(case, summarize(ours), summarize(smdebug), differences, documented, undocumented, stale)


def summarize(document: dict[str, Any]) -> str:
    """One line for the table: how the scripts ended and what the trial holds."""
    parts = []
    for run in document.get("runs", []):
        if run.get("error") or run.get("exit"):
            parts.append(f"{run.get('script')}: {run.get('error') or 'exit ' + str(run.get('exit'))}")
    trial = document.get("trial", {})
    if "error" in trial:
        parts.append(f"create_trial: {trial['error']}")
    else:
        steps = trial.get("steps", {})
        total = steps.get("GLOBAL") if isinstance(steps.get("GLOBAL"), list) else []
        per_mode = ", ".join(f"{mode} {len(steps[mode])}" for mode in trial.get("modes", []) if isinstance(steps.get(mode), list))
        parts.append(_count(len(total), "step") + (f" ({per_mode})" if per_mode else ""))
        parts.append(_count(len(trial.get("tensor_names", [])), "tensor"))
        rule = trial.get("rule")
        if rule:
            if rule.get("constructed") is not True:
                parts.append(f"rule: {rule['constructed'].get('error')}")
            else:
                parts.append(f"rule invoked at {_count(len(rule['invoked']), 'step')}, met at {rule['met']}")
    follow = document.get("follow")
    if follow:
        end = follow.get("no_more_data", {})
        parts.append(f"followed {_count(len(follow.get('values', {})), 'step')} live, NoMoreData at {end.get('step')}")
    return "; ".join(parts)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def table(found: list[Row]) -> str:
    lines = ["| script | ours | smdebug 1.0.34 | same? |", "| --- | --- | --- | --- |"]
    for row in found:
        script = f"[{row.case.name}](../tests/smdebug_corpus/{row.case.folder})"
        lines.append(f"| {script} | {row.ours} | {row.smdebug} | {row.verdict} |")
    return "\n".join(lines)


def differences_section() -> str:
    parts = []
    for difference in DIFFERENCES.values():
        parts.append(
            f'<a id="{difference.id.lower()}"></a>\n### {difference.id}: {difference.title}\n\n'
            f"- smdebug 1.0.34: {difference.smdebug}\n- ours: {difference.ours}\n- why: {difference.why}\n"
        )
    return "\n".join(parts)


def rewrite_document(found: list[Row], path: Path = DOCUMENT) -> None:
    """Replace the table (between its markers) and the differences section of the compatibility document."""
    text = path.read_text()
    head, rest = text.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    marker, end = DIFFERENCES_START, DIFFERENCES_END
    tail_head, tail_rest = tail.split(marker, 1)
    _, tail_tail = tail_rest.split(end, 1)
    path.write_text(
        f"{head}{TABLE_START}\n{table(found)}\n{TABLE_END}{tail_head}{marker}\n{differences_section()}\n{end}{tail_tail}"
    )


def documented_table(path: Path = DOCUMENT) -> str | None:
    text = path.read_text() if path.exists() else ""
    if TABLE_START not in text:
        return None
    return text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()


def report(found: list[Row]) -> str:
    """What is wrong, case by case, for a failing test."""
    lines = []
    for row in found:
        if row.ok:
            continue
        lines.append(f"{row.case.name}:")
        for path, ours, smdebug in row.undocumented[:12]:
            lines.append(f"  {path}\n    ours:    {json.dumps(ours)[:300]}\n    smdebug: {json.dumps(smdebug)[:300]}")
        if len(row.undocumented) > 12:
            lines.append(f"  ... and {len(row.undocumented) - 12} more")
        for key in row.stale:
            lines.append(f"  names documented difference {key}, which it no longer shows")
    return "\n".join(lines)
