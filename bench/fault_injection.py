"""The long fault-injection run (issue 23): whole executions of the real state machine in moto under randomised
fault schedules, one seed each; after each, the product's promises are checked. Prints JSON.

    python bench/fault_injection.py [--executions 200] [--first-seed 0] [--workers 2] [--abort-share 0.35]

Each execution draws (tests/workflow/fault_scenarios.py): what its jobs do (healthy, exploding, vanishing, out of
capacity, failing code, missing the objective, a rule in Error, out of time, stopped by someone), a fault rate
(5-20% of every AWS call the Lambdas make and every Lambda invoke of the state machine: throttles, 5xx, timeouts,
Lambda timeouts before or after the handler ran; at most two in a row per operation), in a quarter of them one fault
held long enough to outlast one of the stack's retry budgets (tests/workflow/fault_scenarios.BURSTS: a Lambda invoke
through its 10 retries, an AWS call through its 6, the account's instance quota through its 5, the monitor's 20
polls, the cleanup's 3 x 8 tries), late, duplicated or reordered job events, and in a share of them a StopExecution
at one of 16 handler moments (the report counts the stops drawn and those that happened: one drawn at a moment the
execution never reached did not). The promises (tests/workflow/fault_harness.check_invariants): no training job
running once the execution has ended (a job its cleanup could not reach only when the cleanup failed on every try,
alarmed), at most one job per attempt, no success without every rule that must report NoIssuesFound (whatever else
it said) and the objective met, no healthy job stopped while its execution ran (unless a fault outlasted its
budget), no run ended on a Lambda fault that stayed within its retries, every end cause named, and no end silent. `make test` runs a bounded number of seeds
(tests/workflow/test_fault_injection.py); this runs as many as asked, in worker processes of their own.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
#: The patches a worker keeps until it exits (a context manager left unreferenced would undo its patch when the
#: garbage collector closes it: the Retry waits were real again, and an execution retrying a throttled launch took
#: minutes of real sleep).
_FOR_THE_WORKERS_LIFE = contextlib.ExitStack()
HARNESS = REPO_ROOT / "tests" / "workflow"


def _prepare() -> None:
    for path in (str(REPO_ROOT), str(HARNESS), str(HARNESS.parent)):
        if path not in sys.path:
            sys.path.insert(0, path)
    from local_runtime.offline_aws import OFFLINE_AWS_ENVIRONMENT

    os.environ.update(OFFLINE_AWS_ENVIRONMENT)
    os.environ.pop("AWS_PROFILE", None)
    from asl_parse_cache import parse_each_definition_once
    from sns_signing_key_once import signing_key_made_once

    _FOR_THE_WORKERS_LIFE.enter_context(parse_each_definition_once())  # once per worker, not per execution
    _FOR_THE_WORKERS_LIFE.enter_context(signing_key_made_once())
    import logging

    logging.disable(logging.CRITICAL)  # the handlers' logs: millions of lines over a long run


#: Executions per moto account: moto's lookups scan every execution it holds, so a fresh account keeps each
#: execution's cost flat over a long run.
EXECUTIONS_PER_ACCOUNT = 50


def run_seeds(
    seeds: list[int], abort_share: float, per_account: int = EXECUTIONS_PER_ACCOUNT, burst_share: float = 0.25
) -> list[dict]:
    """One worker: the given seeds in turn, a fresh moto account every ``per_account``; each outcome as a dict."""
    _prepare()
    results: list[dict] = []
    for start in range(0, len(seeds), per_account):
        results += _run_in_one_account(seeds[start : start + per_account], abort_share, burst_share)
        done = len(results)
        print(f"worker {os.getpid()}: {done} of {len(seeds)} executions", file=sys.stderr, flush=True)
    return results


def _run_in_one_account(seeds: list[int], abort_share: float, burst_share: float) -> list[dict]:
    import contextlib
    import io

    from fault_harness import FaultHarness
    from fault_scenarios import draw, run_drawn
    from patched_workflow import open_patched_workflow

    results = []
    # as the workflow tests run it (shortened Retry waits, the quiet clock for callback waits, StopExecution as in AWS)
    with open_patched_workflow(os.environ.__setitem__) as workflow:
        faults = FaultHarness(workflow)
        try:
            for seed in seeds:
                started = time.monotonic()
                with contextlib.redirect_stdout(io.StringIO()):  # Powertools prints its JSON log lines
                    try:
                        outcome = run_drawn(
                            workflow, faults, draw(seed, abort_share=abort_share, burst_share=burst_share)
                        )
                    except Exception as error:  # noqa: BLE001 - a harness failure is reported, not a crash of the run
                        results.append({"seed": seed, "harness_error": f"{type(error).__name__}: {error}"})
                        continue
                results.append(
                    {
                        "seed": seed,
                        "status": outcome.status,
                        "error": outcome.error,
                        "faults": outcome.faults,
                        "stop_drawn": outcome.drawn.abort is not None,
                        "stopped": outcome.stopped,
                        "burst": outcome.drawn.burst.name if outcome.drawn.burst else None,
                        "violations": outcome.violations,
                        "line": outcome.line(),
                        "seconds": round(time.monotonic() - started, 2),
                    }
                )
        finally:
            faults.close()
    return results


def _count(values) -> dict[str, int]:
    counted: dict[str, int] = {}
    for value in values:
        counted[value] = counted.get(value, 0) + 1
    return counted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--abort-share", type=float, default=0.35)
    parser.add_argument("--burst-share", type=float, default=0.25)
    parser.add_argument("--per-account", type=int, default=EXECUTIONS_PER_ACCOUNT)
    arguments = parser.parse_args(argv)
    seeds = list(range(arguments.first_seed, arguments.first_seed + arguments.executions))
    shares = [seeds[index :: arguments.workers] for index in range(arguments.workers)]
    started = time.monotonic()
    with ProcessPoolExecutor(max_workers=arguments.workers) as pool:
        chunks = pool.map(
            run_seeds,
            shares,
            [arguments.abort_share] * len(shares),
            [arguments.per_account] * len(shares),
            [arguments.burst_share] * len(shares),
        )
        results = [item for chunk in chunks for item in chunk]
    results.sort(key=lambda item: item["seed"])
    ends: dict[str, int] = {}
    for item in results:
        key = item.get("status", "HARNESS_ERROR")
        if key == "FAILED":
            key = f"FAILED:{item['error']}"
        ends[key] = ends.get(key, 0) + 1
    report = {
        "command": "python bench/fault_injection.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "executions": len(results),
        "faults_injected": sum(item.get("faults", 0) for item in results),
        # a stop drawn at a moment the execution never reached (it ended before) did not happen: counted apart
        "stops_drawn": sum(1 for item in results if item.get("stop_drawn")),
        "executions_stopped_on_purpose": sum(1 for item in results if item.get("stopped")),
        "bursts_by_budget": dict(sorted(_count(item.get("burst") for item in results if item.get("burst")).items())),
        "invariant_violations": sum(len(item.get("violations", [])) for item in results),
        "harness_errors": [item for item in results if "harness_error" in item],
        "violations": [f"{item['line']}: {v}" for item in results for v in item.get("violations", [])],
        "ends": dict(sorted(ends.items())),
        "wall_seconds": round(time.monotonic() - started, 1),
        "seconds_per_execution_median": sorted(item.get("seconds", 0) for item in results)[len(results) // 2]
        if results
        else None,
    }
    print(json.dumps(report, indent=2))
    return 0 if report["invariant_violations"] == 0 and not report["harness_errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
