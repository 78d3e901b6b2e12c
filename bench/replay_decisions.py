"""Replay every recorded decision of finished remediation runs through this checkout's planner.

Each run directory holds the final payload the local runtime wrote (``final-payload.json``). For every job of an
evidence-policy run that carries a decision, the state is cut back to what the planner saw then (the attempts up to
that job, its launch count, the settings it ran with) and planned again. Run it from two checkouts on the same run
directories and compare the lines: the decisions a planner change moves, on real trajectories, without training.

    .venv/bin/python bench/replay_decisions.py /path/to/work/seed-*/*-evidence > decisions.txt

Prints one line per replayed decision (run, job, the remedy chosen now, ``none`` when the run would end) and a JSON
summary last (decisions replayed, how many differ from what the run recorded, payloads that no longer read).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lambdas.remediation.planning.planner import plan
from lambdas.remediation.state.payload import WorkflowState


def state_at(payload: dict[str, Any], number: int) -> dict[str, Any]:
    """The state as the planner read it after job ``number``: later jobs, this job's decision and the run's end cut."""
    state = copy.deepcopy(payload)
    attempts = state["attempts"][:number]
    last = attempts[-1]
    last["decision"] = None
    state["attempts"] = attempts
    state["next_action"], state["end_reason"] = "monitor", None
    state["history"]["num_retraining"] = number
    state["history"]["latest_job_name"] = last["job_name"]
    state["run_spec"]["hyperparameters"] = dict(last["hyperparameters"])
    state["run_spec"].update(last.get("debugger_settings") or {})
    return state


def replay(run_dir: Path) -> list[tuple[int, str | None, str]]:
    """(job, remedy recorded, remedy now) for each decision of the run."""
    payload = json.loads((run_dir / "final-payload.json").read_text())["state"]
    replayed = []
    for attempt in payload["attempts"]:
        recorded = attempt.get("decision")
        if recorded is None:
            continue
        planned = plan(WorkflowState.model_validate(state_at(payload, attempt["number"])))
        decision = planned.last_attempt.decision
        replayed.append((attempt["number"], recorded.get("remedy"), (decision.remedy if decision else None) or "none"))
    return replayed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories holding final-payload.json")
    args = parser.parse_args()
    total = differ = unreadable = 0
    for run_dir in sorted(args.runs):
        if not (run_dir / "final-payload.json").is_file():
            continue
        try:
            decisions = replay(run_dir)
        except (ValidationError, KeyError) as error:  # a payload from an older contract
            unreadable += 1
            print(f"# {run_dir.name}: does not read ({type(error).__name__})", file=sys.stderr)
            continue
        for number, recorded, now in decisions:
            total += 1
            differ += (recorded or "none") != now
            print(f"{run_dir.name} {number} {now}")
    print(json.dumps({"decisions_replayed": total, "differ_from_recorded": differ, "runs_unreadable": unreadable}))


if __name__ == "__main__":
    main()
