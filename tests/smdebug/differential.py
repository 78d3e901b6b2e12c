"""The differential harness: every case of differential_cases runs under real smdebug 1.0.34 (the reference
environment .venv-smdebug-reference, built by `make smdebug-reference`) and under ours, each into its own output, and
the same reader (differential_reader) reads each back under its own implementation; the two documents are compared.

    .venv/bin/python tests/smdebug/differential.py                       # JSON: rows, differences, seconds
    .venv/bin/python tests/smdebug/differential.py --table docs/smdebug-compatibility.md   # and rewrite the document
    .venv/bin/python tests/smdebug/differential.py --case save_all --keep /tmp/diff        # one case, outputs kept

One worker process per implementation runs every case (differential_worker: torch and smdebug imported once, each
script in a forked child), both workers at once. tests/smdebug/test_differential.py runs it in `make test`.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from differential_cases import CASES, Case  # noqa: E402
from differential_differences import DIFFERENCES, Difference  # noqa: E402

REFERENCE = REPO / ".venv-smdebug-reference"
REFERENCE_PYTHON = REFERENCE / "bin" / "python"
REFERENCE_MARKER = REFERENCE / ".installed"
REFERENCE_LOG = REPO / ".venv-smdebug-reference.log"
WORKER = HERE / "differential_worker.py"
IMPLEMENTATIONS = ("ours", "smdebug")
#: Values and reductions agree when within these tolerances (ours reduces in float64, smdebug in the tensor's dtype).
RTOL, ATOL = 1e-5, 1e-7
DOCUMENT = REPO / "docs" / "smdebug-compatibility.md"
TABLE_START, TABLE_END = "<!-- differential table: start -->", "<!-- differential table: end -->"
#: Fake credentials and no metadata or profile lookups: nothing may reach AWS (the S3 case runs in moto).
OFFLINE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}


def reference_unavailable() -> str | None:
    """Why the reference environment cannot be used (None when it can): not built, or its build failed, with the
    failed command and the end of the build's output."""
    if REFERENCE_MARKER.exists() and REFERENCE_PYTHON.exists():
        return None
    if not REFERENCE_LOG.exists():
        return f"the smdebug 1.0.34 reference environment ({REFERENCE.name}) is not built: run `make smdebug-reference`"
    # pip's notes on index locations it skips say nothing about the failure
    lines = [line for line in REFERENCE_LOG.read_text(errors="replace").splitlines() if not line.startswith("WARNING: Location")]
    if lines and lines[-1].startswith("built "):
        return f"the smdebug 1.0.34 reference environment ({REFERENCE.name}) is incomplete: run `make smdebug-reference`"
    commands = [line[2:] for line in lines if line.startswith("+ ")]
    failed = commands[-1] if commands else "(no command recorded)"
    tail = "\n".join(lines[-15:])
    return (
        f"the smdebug 1.0.34 reference environment ({REFERENCE.name}) could not be built by `make smdebug-reference`; "
        f"the command that failed: {failed}\nthe end of {REFERENCE_LOG.name}:\n{tail}"
    )


# --------------------------------------------------------------------------- running


def _substitute(value: str, places: dict[str, str]) -> str:
    for key, place in places.items():
        value = value.replace("{" + key + "}", place)
    return value


def _case_plan(case: Case, root: Path) -> dict[str, Any]:
    directory = root / case.name
    config_dir = directory / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    out_dir = case.trial_path if case.kind == "s3" else str(directory / "out")
    places = {"out_dir": out_dir, "config_dir": str(config_dir)}
    env: dict[str, str] = {}
    if case.hook_config is not None:
        (config_dir / "debughookconfig.json").write_text(json.dumps({**case.hook_config, "LocalPath": out_dir}))
        env["SMDEBUG_CONFIG_FILE_PATH"] = str(config_dir / "debughookconfig.json")
    if case.rule_configs is not None:
        (config_dir / "rules.json").write_text(json.dumps(case.rule_configs))
        env["DEBUGGER_RULE_CONFIG_FILE_PATH"] = str(config_dir / "rules.json")
    plan = {
        "name": case.name,
        "kind": case.kind,
        "folder": str(REPO / "tests" / "smdebug_corpus" / case.folder),
        "dir": str(directory),
        "cwd": str(directory / "cwd"),
        "env": env,
        "trial_path": _substitute(case.trial_path, places),
        "probe": case.probe,
        "runs": [
            {
                "script": run.script,
                "args": [_substitute(arg, places) for arg in run.args],
                "env": {key: _substitute(value, places) for key, value in run.env.items()},
                "capture": run.capture,
                "during": run.during,
            }
            for run in case.runs
        ],
    }
    if case.kind == "s3":
        plan["bucket"] = case.trial_path.split("/")[2]
    return plan


def _environment() -> dict[str, str]:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
    env.update(OFFLINE_AWS)
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONHASHSEED="0",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        SMDEBUG_LOG_LEVEL="warning",
        # smdebug waits this many seconds before its last refresh once a run has ended (S3's eventual consistency);
        # neither the local disk nor moto needs it, and every trial of a finished run would pay it
        SMDEBUG_TRAINING_END_DELAY_REFRESH="0",
        # our hook mirrors a JSON file's S3 path to S3 unless told not to (real smdebug never uploads: SageMaker does)
        DEBUG_OUTPUT_S3_SYNC="off",
    )
    return env


@dataclasses.dataclass
class Outcome:
    documents: dict[str, dict[str, dict[str, Any]]]  # case -> implementation -> document
    seconds: dict[str, float]  # implementation -> wall time of its worker
    identities: dict[str, dict[str, Any]]


def run(root: Path, cases: tuple[Case, ...] = CASES, timeout: float = 900) -> Outcome:
    """Run ``cases`` under both implementations at once (one worker each), into ``root/<implementation>/<case>``."""
    pythons = {"ours": sys.executable, "smdebug": str(REFERENCE_PYTHON)}
    processes, started, plans = {}, {}, {}
    for implementation in IMPLEMENTATIONS:
        base = root / implementation
        base.mkdir(parents=True, exist_ok=True)
        plan = {
            "identity": str(base / "identity.json"),
            "xgboost": any(case.folder.startswith("xgboost") for case in cases),
            "cases": [_case_plan(case, base) for case in cases],
        }
        plans[implementation] = base / "plan.json"
        plans[implementation].write_text(json.dumps(plan, indent=1))
        started[implementation] = time.monotonic()
        processes[implementation] = subprocess.Popen(
            [pythons[implementation], str(WORKER), str(plans[implementation])],
            cwd=base,
            env=_environment(),
            stdout=open(base / "worker.log", "w"),  # noqa: SIM115 - closed with the process
            stderr=subprocess.STDOUT,
        )
    seconds = {}
    for implementation, process in processes.items():
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        seconds[implementation] = round(time.monotonic() - started[implementation], 1)
        if process.returncode != 0:
            log = (root / implementation / "worker.log").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the {implementation} worker exited with {process.returncode}:\n{log}")
    identities = {
        implementation: json.loads((root / implementation / "identity.json").read_text()) for implementation in IMPLEMENTATIONS
    }
    if identities["ours"].get("ours") is not True or identities["smdebug"].get("ours") is not False:
        raise RuntimeError(f"the workers did not import the smdebug each should: {identities}")
    if identities["smdebug"].get("version") != "1.0.34":
        raise RuntimeError(f"the reference is not smdebug 1.0.34: {identities['smdebug']}")
    documents = {
        case.name: {implementation: _document(case, root / implementation / case.name) for implementation in IMPLEMENTATIONS}
        for case in cases
    }
    return Outcome(documents, seconds, identities)


def _load(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else {"error": "not written"}


def _last_json_line(path: Path) -> Any:
    if not path.exists():
        return {"error": "not written"}
    for line in reversed(path.read_text(errors="replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return {"error": "no JSON report"}


def _document(case: Case, directory: Path) -> dict[str, Any]:
    """What one implementation did for ``case``: how each script ended, the analysis scripts' reports, the trial."""
    document: dict[str, Any] = {
        "runs": [_load(directory / f"run-{index}.json") for index in range(len(case.runs))],
        "analyses": {
            run.script: _last_json_line(directory / f"stdout-{index}.txt") for index, run in enumerate(case.runs) if run.capture
        },
        "trial": _load(directory / "trial.json"),
    }
    if "follow" in case.probe:
        document["follow"] = _load(directory / "follow.json")
    done = _load(directory / "done.json")
    document["children"] = [status for status, _ in done.get("children") or []]
    return document


# --------------------------------------------------------------------------- comparing


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


def rows(outcome: Outcome, cases: tuple[Case, ...] = CASES) -> list[Row]:
    return [classify(case, outcome.documents[case.name]) for case in cases]


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
    marker = "<!-- differences: start -->"
    end = "<!-- differences: end -->"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, nargs="?", const=DOCUMENT, help="rewrite this document's table")
    parser.add_argument("--case", action="append", help="run only this case (repeatable)")
    parser.add_argument("--keep", type=Path, help="write the outputs here and keep them")
    parser.add_argument("--show", action="store_true", help="print every difference, documented or not")
    args = parser.parse_args(argv)
    unavailable = reference_unavailable()
    if unavailable:
        print(unavailable, file=sys.stderr)
        return 2
    cases = tuple(case for case in CASES if not args.case or case.name in args.case)
    root = args.keep or Path(tempfile.mkdtemp(prefix="smdebug-differential-"))
    if args.keep and root.exists():
        shutil.rmtree(root)
    started = time.monotonic()
    try:
        outcome = run(root, cases)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    found = rows(outcome, cases)
    if args.table:
        rewrite_document(found, args.table)
    summary = {
        "seconds": round(time.monotonic() - started, 1),
        "worker_seconds": outcome.seconds,
        "cases": len(found),
        "same": sum(not row.differences for row in found),
        "documented": sum(bool(row.differences) and row.ok for row in found),
        "failing": [row.case.name for row in found if not row.ok],
        "rows": [{"case": row.case.name, "ours": row.ours, "smdebug": row.smdebug, "verdict": row.verdict} for row in found],
    }
    if args.show:
        summary["differences"] = {row.case.name: [[p, o, s] for p, o, s in row.differences] for row in found if row.differences}
    print(json.dumps(summary, indent=1))
    if summary["failing"]:
        print(report(found), file=sys.stderr)
    return 1 if summary["failing"] else 0


if __name__ == "__main__":
    sys.exit(main())
