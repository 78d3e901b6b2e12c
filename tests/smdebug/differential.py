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
import json
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
from differential_compare import (  # noqa: E402, F401 - the harness's API, as the test uses it
    DOCUMENT,
    Row,
    classify,
    compare,
    documented_table,
    report,
    rewrite_document,
    table,
)
from differential_differences import DIFFERENCES  # noqa: E402, F401

REFERENCE = REPO / ".venv-smdebug-reference"
REFERENCE_PYTHON = REFERENCE / "bin" / "python"
REFERENCE_MARKER = REFERENCE / ".installed"
REFERENCE_LOG = REPO / ".venv-smdebug-reference.log"
WORKER = HERE / "differential_worker.py"
IMPLEMENTATIONS = ("ours", "smdebug")
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
    places = {"out_dir": out_dir, "config_dir": str(config_dir), "checkpoint_dir": str(directory / "checkpoints")}
    env: dict[str, str] = {}
    if case.checkpoints:
        (config_dir / "checkpointconfig.json").write_text(json.dumps({"LocalPath": places["checkpoint_dir"]}))
        env["CHECKPOINT_CONFIG_FILE_PATH"] = str(config_dir / "checkpointconfig.json")
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
                "remove": [_substitute(path, places) for path in run.lost_with_instance],
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


def rows(outcome: Outcome, cases: tuple[Case, ...] = CASES) -> list[Row]:
    return [classify(case, outcome.documents[case.name]) for case in cases]


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
