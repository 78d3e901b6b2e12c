"""One run of the product's local workflow for the repair zoos (``bench/repair_zoo.py``'s fixed scenarios and
``bench/zoo_random_run.py``'s drawn configurations), and the figures read from its JSON summary: below both, so
neither imports the other.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: After a failing configuration's evidence run met its objective: its final configuration, trained once from step 0.
REFERENCE = "reference"
#: The issue's targets, which the summaries report against.
TARGET_REPAIR_RATE = 0.95
TARGET_MEDIAN_LAUNCHES = 2
TARGET_COMPUTE_RATIO = 1.5
#: Launches per run (the first included): room for a few remedies, and a bound on the zoo's time.
MAX_LAUNCHES = 5


def launch(spec: dict[str, Any], label: str, policy: str, work: Path, timeout: float, threads: int,
           options: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """One `remediate local run --json` of the execution input ``spec`` (written to ``work/<label>.json``, its run
    directory ``work/<label>``; ``options``: more command-line options, e.g. ``--channel``); its figures
    (:func:`summarize`). ``policy`` anchor or evidence is passed on; any other (none, reference, random) runs the
    evidence set, whose launches ``spec["max_num_retraining"]`` bounds."""
    run_spec = work / f"{label}.json"
    run_spec.write_text(json.dumps(spec, indent=1))
    command = [sys.executable, "-m", "remediate.main", "local", "run", "--json", "--run-spec", str(run_spec),
               "--run-dir", str(work / label), "--num-threads", str(threads)]
    command += ["--policy", policy if policy in ("anchor", "evidence") else "evidence", *options]
    started = time.monotonic()
    finished = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})  # the loop's own process
    wall = round(time.monotonic() - started, 1)
    if finished.returncode not in (0, 1):
        return {"policy": policy, "error": f"exit {finished.returncode}: {finished.stderr.strip()[-600:]}",
                "wall_seconds": wall}
    return summarize(json.loads(finished.stdout), policy, wall)


def summarize(summary: dict[str, Any], policy: str, wall: float) -> dict[str, Any]:
    attempts = summary.get("attempts") or []
    first = attempts[0] if attempts else {}
    values = [attempt.get("objective_value") for attempt in attempts if attempt.get("objective_value") is not None]
    return {
        "policy": policy,
        "execution_status": summary.get("execution_status"),
        "met_objective": summary.get("execution_status") == "SUCCEEDED",
        "first_rule": first.get("rule"),
        "first_issue_step": first.get("issue_step"),
        "first_outcome": first.get("outcome"),
        "rules_fired": [attempt.get("rule") for attempt in attempts if attempt.get("rule")],
        "remedies": [attempt.get("decision") for attempt in attempts if attempt.get("decision")],
        "launches": summary.get("launches"),
        "training_steps": summary.get("total_training_steps"),
        "objective_value": values[-1] if values else None,
        "end_reason": summary.get("end_reason"),
        "wall_seconds": wall,
        "run_dir": summary.get("run_dir"),
        "successful_job": summary.get("successful_job"),
        "final_run_spec": final_run_spec(summary),
    }


def final_run_spec(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The successful job's hyperparameters, rules and the debugger's changes to the loss (class weighting, robust loss; the run's final payload), or
    None if no job succeeded."""
    if summary.get("execution_status") != "SUCCEEDED":
        return None
    payload = json.loads((Path(summary["run_dir"]) / "final-payload.json").read_text())
    run_spec = payload["state"]["run_spec"]
    final = {"hyperparameters": run_spec["hyperparameters"], "rules": run_spec["rules"]}
    for field in ("debugger_class_weighting", "debugger_robust_loss"):
        if run_spec.get(field, "auto") != "auto":
            final[field] = run_spec[field]
    return final
