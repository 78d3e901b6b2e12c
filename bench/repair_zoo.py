"""The repair zoo: failing and healthy training configurations, each run with no remediation, the anchor policy
and the evidence policy, side by side in one run; prints JSON (stdout) and a markdown table (stderr).

For every scenario and policy: the rule that fired on the first job and at which step, launches, training steps
spent, the final objective value and whether the run met its objective. The summary gives the repair rate
(failing scenarios whose evidence run met the objective), the detection rate (the expected rule fired first),
false alarms on the healthy scenarios, data errors ended without a relaunch, the median launches to the objective,
and the compute ratio: a repaired run's training steps (every launch) over one run from step 0 of the configuration
it ended with (the "reference" run, made once the evidence run has met its objective), against the targets
(repair rate >= 0.95, no false alarm, median launches <= 2, compute ratio <= 1.5).

    python bench/repair_zoo.py                       # every scenario, every policy (about 12 minutes on 2 cores)
    python bench/repair_zoo.py --list
    python bench/repair_zoo.py --scenario mlp-explode --policies evidence
    python bench/repair_zoo.py --markdown zoo.md     # the table into a file as well
    python bench/repair_zoo.py --random 40 --seed 7 --policies evidence,random --workers 2 --markdown zoo7.md
    python bench/repair_zoo.py --random 40 --space v2 --seed 2000 --policies evidence,random --workers 2

``--random N --seed S`` runs N configurations drawn at random (``bench/zoo_random.py``: the space, the faults) under
the evidence policy and a random-remedy baseline, with some healthy twins for the false-alarm rate
(``bench/zoo_random_run.py``: the run; ``bench/zoo_random_report.py``: the per-seed report, per model family and per
fault kind too). ``--space v2`` draws from the widened space (regression, recurrent networks, a Hugging Face Trainer
and a Lightning script: ``bench/zoo_families.py``); the default ``v1`` draws what every earlier seed drew.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples" / "mlp"))

import make_data  # noqa: E402  (examples/mlp/make_data.py)
from zoo_launch import (  # noqa: E402
    MAX_LAUNCHES,
    REFERENCE,
    TARGET_COMPUTE_RATIO,
    TARGET_MEDIAN_LAUNCHES,
    TARGET_REPAIR_RATE,
    launch,
)
from zoo_scenarios import DATA_ERROR, FAILING, HEALTHY, SCENARIOS, Scenario, by_name  # noqa: E402

#: "none" is one launch and no relaunch: what the user gets without the workflow.
POLICIES = ("none", "anchor", "evidence")
RESNET_TRAIN_SAMPLES = 1024
RESNET_TEST_SAMPLES = 256


def write_data(scenario: Scenario, data_root: Path) -> Path:
    """The scenario's train channel (examples/mlp/make_data.py), written once per data set and faults."""
    key = f"{scenario.dataset}{scenario.samples}" + "".join(f"-{name}{value}" for name, value in sorted(scenario.faults.items()))
    directory = data_root / key / "train"
    if not (directory / "y.npy").exists():
        x, y = make_data.make_dataset(scenario.dataset, samples=scenario.samples, **scenario.faults)
        make_data.write_channel(str(directory), x, y)
    return directory


def run_one(scenario: Scenario, policy: str, work: Path, data_root: Path, timeout: float, threads: int,
            final_run_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """One `remediate local run --json` of the scenario under ``policy`` (its jobs on ``threads`` threads); its
    figures. REFERENCE: one launch from step 0 of ``final_run_spec`` (the evidence run's successful job's
    hyperparameters and rules), the healthy configuration the repaired run's compute is compared with."""
    spec = scenario.execution_input()
    if final_run_spec is not None:
        spec.update(final_run_spec)
    spec["max_num_retraining"] = 1 if policy in ("none", REFERENCE) else MAX_LAUNCHES
    if scenario.family == "mlp":
        spec["source_dir"] = str(ROOT / spec["source_dir"])
        options = ["--channel", f"train={write_data(scenario, data_root)}"]
    else:
        options = ["--train-samples", str(RESNET_TRAIN_SAMPLES), "--test-samples", str(RESNET_TEST_SAMPLES)]
    return launch(spec, f"{scenario.name}-{policy}", policy, work, timeout, threads, options)


def verdict(scenario: Scenario, runs: dict[str, dict[str, Any]], reference: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the scenario shows: detected, repaired (and at what compute against ``reference``, the REFERENCE run),
    a false alarm, a data error ended at once."""
    evidence = runs.get("evidence") or next(iter(runs.values()))
    first_rules = {run.get("first_rule") for run in runs.values() if "error" not in run}
    result = {"detected": scenario.expect in first_rules if scenario.expect else None}
    if scenario.kind == FAILING:
        result["repaired"] = bool(evidence.get("met_objective"))
        if reference is not None and reference.get("training_steps") and evidence.get("training_steps") is not None:
            # The repaired run's training steps, all launches together, over one clean run of its final configuration.
            result["compute_ratio"] = round(evidence["training_steps"] / reference["training_steps"], 2)
            result["reference_met_objective"] = bool(reference.get("met_objective"))
    elif scenario.kind == HEALTHY:
        result["false_alarm"] = any(run.get("rules_fired") for run in runs.values() if "error" not in run)
        result["met_objective"] = bool(evidence.get("met_objective"))
    else:
        result["ended_without_relaunch"] = evidence.get("launches") == 1 and evidence.get("first_outcome") == "data_error"
    return result


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    failing = [r for r in results if r["kind"] == FAILING]
    healthy = [r for r in results if r["kind"] == HEALTHY]
    data_errors = [r for r in results if r["kind"] == DATA_ERROR]

    def rate(rows, key):
        return round(sum(bool(r["verdict"].get(key)) for r in rows) / len(rows), 3) if rows else None

    repaired = [r for r in failing if r["verdict"].get("repaired")]
    launches = [r["runs"]["evidence"]["launches"] for r in repaired if "evidence" in r["runs"]]
    ratios = [r["verdict"]["compute_ratio"] for r in repaired if "compute_ratio" in r["verdict"]]
    return {
        "failing_scenarios": len(failing),
        "healthy_scenarios": len(healthy),
        "data_error_scenarios": len(data_errors),
        "repair_rate": rate(failing, "repaired"),
        "detection_rate": rate([r for r in results if r["expect"]], "detected"),
        "false_alarms": sum(bool(r["verdict"].get("false_alarm")) for r in healthy),
        "data_errors_ended_at_once": sum(bool(r["verdict"].get("ended_without_relaunch")) for r in data_errors),
        "rules_covered": sorted({r["expect"] for r in results if r["expect"]}),
        "median_launches_to_objective": statistics.median(launches) if launches else None,
        "compute_ratio_median": statistics.median(ratios) if ratios else None,
        "compute_ratio_max": max(ratios) if ratios else None,
        "compute_ratio_within_target": sum(ratio <= TARGET_COMPUTE_RATIO for ratio in ratios),
        "compute_ratios_measured": len(ratios),
        "targets": {"repair_rate": TARGET_REPAIR_RATE, "false_alarms": 0, "median_launches": TARGET_MEDIAN_LAUNCHES,
                    "compute_ratio": TARGET_COMPUTE_RATIO},
    }


def markdown(results: list[dict[str, Any]], policies: tuple[str, ...], summary: dict[str, Any]) -> str:
    def cell(run: dict[str, Any] | None) -> str:
        if not run:
            return ""
        if "error" in run:
            return "error"
        value = run["objective_value"]
        shown = "n/a" if value is None else f"{value:.2f}"
        mark = "met" if run["met_objective"] else "missed"
        return f"{run['launches']} / {run['training_steps']} / {shown} {mark}"

    header = "| scenario | model, data | expected rule | fired (step) | " + " | ".join(
        f"{policy}: launches / steps / objective" for policy in policies) + " | evidence steps / healthy |"
    lines = [header, "|" + "---|" * (5 + len(policies))]
    for result in results:
        runs = result["runs"]
        anyrun = runs.get("evidence") or next(iter(runs.values()))
        fired = anyrun.get("first_rule") or "none"
        if anyrun.get("first_issue_step") is not None:
            fired += f" ({anyrun['first_issue_step']})"
        data = result["dataset"] if result["family"] == "mlp" else "generated images"
        reference = result.get("reference")
        ratio = result["verdict"].get("compute_ratio")
        compute = "" if ratio is None else f"{ratio:.2f} ({reference['training_steps']} steps)"
        lines.append(f"| {result['scenario']} | {result['family']}, {data} | {result['expect'] or 'none'} | {fired} | "
                     + " | ".join(cell(runs.get(policy)) for policy in policies) + f" | {compute} |")
    lines.append("")
    lines.append(f"Repair rate (evidence) {summary['repair_rate']} over {summary['failing_scenarios']} failing "
                 f"scenarios (target {TARGET_REPAIR_RATE}); detection rate {summary['detection_rate']}; false alarms "
                 f"{summary['false_alarms']} of {summary['healthy_scenarios']} healthy (target 0); data errors ended "
                 f"at once {summary['data_errors_ended_at_once']} of {summary['data_error_scenarios']}; median "
                 f"launches to the objective {summary['median_launches_to_objective']} (target at most "
                 f"{TARGET_MEDIAN_LAUNCHES}); training steps over one healthy run of the final configuration: median "
                 f"{summary['compute_ratio_median']}, max {summary['compute_ratio_max']}, "
                 f"{summary['compute_ratio_within_target']} of {summary['compute_ratios_measured']} within "
                 f"{TARGET_COMPUTE_RATIO} (target).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--scenario", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--policies", help=f"comma list of {', '.join(POLICIES)} (--random: evidence, random; "
                        "default: all)")
    parser.add_argument("--work-dir", type=Path, help="where run directories go (default: a temp dir)")
    parser.add_argument("--jobs", "--workers", type=int, default=2, help="runs at once (default 2: one per core)")
    parser.add_argument("--random", type=int, metavar="N", help="run N configurations drawn at random (zoo_random.py)")
    parser.add_argument("--seed", type=int, action="append", help="--random: the drawing's seed (repeatable)")
    parser.add_argument("--space", choices=("v1", "v2"), default=None,
                        help="--random: the drawing's space: v1 (default; every earlier seed's) or v2 (adds regression, "
                        "recurrent and transformer families and their faults: bench/zoo_families.py)")
    parser.add_argument("--healthy-share", type=float, default=None,
                        help="--random: the share of configurations whose healthy twin runs too (default 0.25)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    parser.add_argument("--markdown", type=Path, help="also write the markdown table to this file")
    parser.add_argument("--style", action="append",
                        help="--random: run only the drawn configurations of this script style or model family "
                        "(repeatable, e.g. hf_trainer, transformer); the drawing and its names are unchanged")
    parser.add_argument("--allow-loss-changes", action="store_true",
                        help="--random: every evidence run allows loss changes (the run_spec's allow_loss_changes)")
    arguments = parser.parse_args(argv)
    if arguments.random is not None:
        return main_random(parser, arguments)
    if (arguments.seed or arguments.healthy_share is not None or arguments.space is not None or arguments.allow_loss_changes
            or arguments.style):
        parser.error("--seed, --space, --healthy-share, --style and --allow-loss-changes go with --random N")
    scenarios = by_name()
    if arguments.list:
        for scenario in SCENARIOS:
            print(f"{scenario.name:28} {scenario.kind:10} {scenario.expect or '-':24} {scenario.description}")
        return 0
    policies = tuple(policy.strip() for policy in (arguments.policies or ",".join(POLICIES)).split(",") if policy.strip())
    unknown = [policy for policy in policies if policy not in POLICIES]
    if unknown or not policies:
        parser.error(f"--policies: {', '.join(unknown) or 'none given'}; choose from {', '.join(POLICIES)}")
    names = arguments.scenario or [scenario.name for scenario in SCENARIOS]
    missing = [name for name in names if name not in scenarios]
    if missing:
        parser.error(f"--scenario {missing[0]}: no such scenario; `--list` lists them")
    work = arguments.work_dir or Path(tempfile.mkdtemp(prefix="repair-zoo-"))
    work.mkdir(parents=True, exist_ok=True)
    data_root = work / "data"
    for name in names:  # data first, once, before the runs race for it
        if scenarios[name].family == "mlp":
            write_data(scenarios[name], data_root)
    # Each run's jobs get their share of the cores: two jobs at 2 threads each on 2 cores took up to 4 times as long
    # as at 1 thread each (OpenMP threads spin while they wait for a core).
    threads = max(1, (os.cpu_count() or 1) // max(1, arguments.jobs))
    started = time.monotonic()
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, arguments.jobs)) as pool:
        pending = {pool.submit(run_one, scenarios[name], policy, work, data_root, arguments.timeout, threads): (name, policy)
                   for name in names for policy in policies}
        while pending:
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                name, policy = pending.pop(future)
                try:
                    runs[(name, policy)] = future.result()
                except subprocess.TimeoutExpired:
                    runs[(name, policy)] = {"policy": policy, "error": f"timed out after {arguments.timeout:g} s"}
                print(f"  {name} / {policy}: {runs[(name, policy)].get('execution_status', 'error')}", file=sys.stderr)
                final = runs[(name, policy)].get("final_run_spec")
                if policy == "evidence" and scenarios[name].kind == FAILING and final is not None:
                    reference = pool.submit(run_one, scenarios[name], REFERENCE, work, data_root, arguments.timeout,
                                            threads, final)
                    pending[reference] = (name, REFERENCE)
    results = []
    for name in names:
        scenario = scenarios[name]
        scenario_runs = {policy: runs[(name, policy)] for policy in policies}
        reference = runs.get((name, REFERENCE))
        result = {"scenario": name, "family": scenario.family, "dataset": scenario.dataset, "kind": scenario.kind,
                  "expect": scenario.expect, "description": scenario.description, "runs": scenario_runs,
                  "verdict": verdict(scenario, scenario_runs, reference)}
        if reference is not None:
            result["reference"] = reference
        results.append(result)
    summary = {**totals(results), "policies": list(policies), "threads_per_job": threads, "wall_seconds": round(time.monotonic() - started, 1),
               "work_dir": str(work)}
    table = markdown(results, policies, summary)
    print(json.dumps({"summary": summary, "scenarios": results}, indent=1))
    print(table, file=sys.stderr)
    if arguments.markdown:
        arguments.markdown.write_text(table + "\n")
    return 0


def main_random(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    """``--random N --seed S``: the drawn zoo, one report per seed (zoo_random_run.py)."""
    import zoo_random_report
    import zoo_random_run

    if arguments.random < 1:
        parser.error(f"--random: the number of configurations to draw, at least 1; got {arguments.random}")
    if not arguments.seed:
        parser.error("--random needs --seed S (repeatable): the drawing's seed")
    if arguments.scenario or arguments.list:
        parser.error("--random draws its configurations; --scenario and --list are for the fixed zoo")
    share = zoo_random_run.DEFAULT_HEALTHY_SHARE if arguments.healthy_share is None else arguments.healthy_share
    if not 0 <= share <= 1:
        parser.error(f"--healthy-share: a share between 0 and 1; got {share}")
    allowed = zoo_random_report.POLICIES
    policies = tuple(policy.strip() for policy in (arguments.policies or ",".join(allowed)).split(",") if policy.strip())
    unknown = [policy for policy in policies if policy not in allowed]
    if unknown or not policies:
        parser.error(f"--policies: {', '.join(unknown) or 'none given'}; with --random choose from {', '.join(allowed)}")
    arguments.space = arguments.space or "v1"
    import zoo_random

    known = sorted({*zoo_random.ALL_STYLES, *(style.family for style in zoo_random.ALL_STYLES.values())})
    unknown_styles = [style for style in arguments.style or () if style not in known]
    if unknown_styles:
        parser.error(f"--style: {', '.join(unknown_styles)} is no script style or model family; choose from {', '.join(known)}")
    work = arguments.work_dir or Path(tempfile.mkdtemp(prefix="repair-zoo-random-"))
    reports, tables = [], []
    for seed in arguments.seed:
        seed_work = work / f"seed-{seed}"
        seed_work.mkdir(parents=True, exist_ok=True)
        report, table = zoo_random_run.run_seed(seed, arguments.random, policies, seed_work, arguments.jobs,
                                                arguments.timeout, share, arguments.space,
                                                {"allow_loss_changes": True} if arguments.allow_loss_changes else None,
                                                styles=frozenset(arguments.style or ()))
        report["summary"]["command"] = "python bench/repair_zoo.py " + " ".join(sys.argv[1:])
        reports.append(report)
        tables.append(f"### Seed {seed}\n\n{table}")
    print(json.dumps({"seeds": reports}, indent=1))
    print("\n\n".join(tables), file=sys.stderr)
    if arguments.markdown:
        arguments.markdown.write_text("\n\n".join(tables) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
