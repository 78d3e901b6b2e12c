"""The random repair zoo's run and report (``python bench/repair_zoo.py --random N --seed S``): the configurations
``bench/zoo_random.py`` draws, each run through ``remediate local run`` (``repair_zoo.launch``) under

* ``evidence``: the product's default for a user's script (the evidence remedy set, the default rules at their
  default parameters), at most ``MAX_LAUNCHES`` launches;
* ``random``: the baseline a repair rate is read against: the same launch budget, one launch at a time (each job
  watched and stopped by the same default rules), and after each failed launch one change drawn at random: half the
  time among the evidence set's changes that apply to the script's hyperparameters (whatever the evidence said),
  else a random change of one hyperparameter of the space (learning rate x0.1/x0.3/x3/x10, epochs x2, batch size
  x0.5/x2, width x0.5/x2, depth +-1, another activation, normalization or optimizer); the changes add up (a random
  walk from the faulty configuration) and every relaunch starts from step 0.

Some healthy twins (the configurations without their fault, ``--healthy-share``) run under ``evidence`` too: a
rule that fires on one is a false alarm. Once a failing configuration's evidence run has met its objective, the
configuration it ended with is trained once from step 0 (the reference) for the compute ratio. Every "met" claim is
checked against the job's own held-out metric: the last held-out accuracy the script logged in the successful
job's log, read by the bench with the script's own log format (not the product's metric definitions).

A configuration is failing when its first launch did not meet the objective (a rule stopped it or it missed); a
fault that left its configuration meeting the objective at the first launch is counted apart (``fault_ineffective``),
neither repaired nor failed.
"""

from __future__ import annotations

import concurrent.futures
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import repair_zoo
import zoo_random

if str(repair_zoo.ROOT) not in sys.path:  # contracts/ and lambdas/, for the evidence set's changes
    sys.path.append(str(repair_zoo.ROOT))
from zoo_random import STYLES, DrawnConfiguration

EVIDENCE, RANDOM, REFERENCE = "evidence", "random", repair_zoo.REFERENCE
POLICIES = (EVIDENCE, RANDOM)
MAX_LAUNCHES = repair_zoo.MAX_LAUNCHES
DEFAULT_HEALTHY_SHARE = 0.25


# --------------------------------------------------------------------------- one configuration


def _channel_options(configuration: DrawnConfiguration, healthy: bool, data_root: Path) -> list[str]:
    channels = zoo_random.write_channels(configuration, healthy, data_root)
    return [option for name, directory in channels.items() for option in ("--channel", f"{name}={directory}")]


def run_evidence(configuration: DrawnConfiguration, work: Path, data_root: Path, timeout: float, threads: int,
                 healthy: bool = False, final_run_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """The evidence policy on the configuration (or its healthy twin); with ``final_run_spec``: the reference run,
    one launch from step 0 of the configuration a repaired run ended with."""
    spec = configuration.execution_input(healthy)
    if final_run_spec is not None:
        spec.update(final_run_spec)
    spec["max_num_retraining"] = 1 if final_run_spec is not None else MAX_LAUNCHES
    policy = REFERENCE if final_run_spec is not None else EVIDENCE
    label = f"{configuration.name}{'-healthy' if healthy else ''}-{policy}"
    row = repair_zoo.launch(spec, label, policy, work, timeout, threads,
                            _channel_options(configuration, healthy, data_root))
    return {**row, "held_out": held_out_check(configuration, row)}


def run_random(configuration: DrawnConfiguration, work: Path, data_root: Path, timeout: float,
               threads: int) -> dict[str, Any]:
    """The random-remedy baseline: up to MAX_LAUNCHES single launches, a random change after each failed one."""
    rng = random.Random(f"repair-zoo-random/{configuration.seed}/{configuration.index}")
    hyperparameters = configuration.hyperparameters()
    options = _channel_options(configuration, False, data_root)
    launches, steps, changes, row, first, rows = 0, 0, [], {}, {}, []
    for number in range(1, MAX_LAUNCHES + 1):
        spec = {**configuration.execution_input(), "hyperparameters": hyperparameters, "max_num_retraining": 1}
        row = repair_zoo.launch(spec, f"{configuration.name}-random-{number}", RANDOM, work, timeout, threads, options)
        rows.append(row)
        if "error" in row:
            return {**row, "launches": launches + 1, "changes": changes}
        launches += 1
        first = first or row
        steps += row.get("training_steps") or 0
        if row["met_objective"] or row.get("first_outcome") == "data_error":
            break
        if number < MAX_LAUNCHES:
            name, hyperparameters = random_change(configuration, hyperparameters, rng)
            changes.append(name)
    return {"policy": RANDOM, "met_objective": bool(row.get("met_objective")), "launches": launches,
            "training_steps": steps, "objective_value": row.get("objective_value"),
            "first_rule": first.get("first_rule"), "first_issue_step": first.get("first_issue_step"),
            "rules_fired": [rule for launch_row in rows for rule in launch_row.get("rules_fired") or []],
            "changes": changes, "held_out": held_out_check(configuration, row)}


def evidence_changes(configuration: DrawnConfiguration, hyperparameters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every change of the evidence set (any rule's, any failure's; conditions ignored) that applies to these
    hyperparameters of the script, by remedy name -> the hyperparameters after it."""
    from contracts.conventional_hyperparameters import hyperparameter_kinds
    from contracts.remedies import adapt_to_script, parse_remedies
    from lambdas.remediation.planning.learning_rate_ranges import range_for
    from lambdas.remediation.planning.remedies.evidence import evidence_remedies

    style = STYLES[configuration.style]
    optimizer = hyperparameters[style.knobs["optimizer"]]
    rates = range_for({"sgd": "SGD", "adam": "Adam"}[optimizer], float(hyperparameters[style.knobs["lr"]]))
    adapted = adapt_to_script(evidence_remedies(rates), style.names, hyperparameters)
    kinds = hyperparameter_kinds(hyperparameters, style.names)
    parsed = parse_remedies(adapted, hyperparameters, check_reachable=False, check_size=False, kinds=kinds)
    changes = {}
    for remedies in parsed.values():
        for remedy in remedies:
            updated = remedy.apply(hyperparameters)
            if updated is not None and updated != hyperparameters:
                changes.setdefault(remedy.label, updated)
    return changes


def space_changes(configuration: DrawnConfiguration, hyperparameters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Random-search moves in the drawing's space, by a short name -> the hyperparameters after it."""
    style = STYLES[configuration.style]
    knobs = style.knobs
    moves: dict[str, dict[str, Any]] = {}

    def put(name: str, argument: str, value: Any) -> None:
        if argument in hyperparameters and value != hyperparameters[argument]:
            moves[name] = {**hyperparameters, argument: value}

    lr = float(hyperparameters[knobs["lr"]])
    for factor in (0.1, 0.3, 3, 10):
        put(f"lr x{factor:g}", knobs["lr"], float(f"{lr * factor:.6g}"))
    put("epochs x2", knobs["epochs"], hyperparameters[knobs["epochs"]] * 2)
    for factor in (0.5, 2):
        put(f"batch x{factor:g}", knobs["batch_size"], max(8, int(hyperparameters[knobs["batch_size"]] * factor)))
        put(f"width x{factor:g}", knobs["width"], max(4, int(hyperparameters[knobs["width"]] * factor)))
    if "depth" in knobs:
        depth = hyperparameters[knobs["depth"]]
        put("depth +1", knobs["depth"], depth + 1)
        if depth > 1:
            put("depth -1", knobs["depth"], depth - 1)
    for activation in style.activations:
        put(f"activation {activation}", knobs["activation"], activation)
    for norm in style.norms:
        value = norm if style.name in ("mlp_smd", "cnn_smd") else (norm == "batch")
        value = int(value) if style.name == "logline" else value
        put(f"norm {norm}", knobs["norm"], value)
    for optimizer in ("sgd", "adam"):
        put(f"optimizer {optimizer}", knobs["optimizer"], optimizer)
    return moves


def random_change(configuration: DrawnConfiguration, hyperparameters: dict[str, Any],
                  rng: random.Random) -> tuple[str, dict[str, Any]]:
    """(what changed, the hyperparameters after it): half the time an applicable change of the evidence set, else
    a random move in the space."""
    evidence = evidence_changes(configuration, hyperparameters)
    pool = evidence if evidence and rng.random() < 0.5 else space_changes(configuration, hyperparameters)
    name = rng.choice(sorted(pool))
    return name, pool[name]


def held_out_check(configuration: DrawnConfiguration, row: dict[str, Any]) -> dict[str, Any] | None:
    """For a run that claims it met its objective: the last held-out accuracy its successful job's script logged
    (its own log format, read here), and whether that meets the target. None for a run that claims nothing."""
    if not row.get("met_objective"):
        return None
    style = STYLES[configuration.style]
    job = row.get("successful_job")
    log = Path(row["run_dir"]) / "jobs" / job / "training.log" if job and row.get("run_dir") else None
    if log is None or not log.exists():
        return {"value": None, "meets": False, "why": f"no log for the successful job {job!r}"}
    found = re.findall(style.held_out_regex, log.read_text(errors="replace"))
    if not found:
        return {"value": None, "meets": False, "why": f"no held-out accuracy in {log}"}
    value = float(found[-1]) / (100 if style.held_out_percent else 1)
    return {"value": round(value, 4), "meets": value >= configuration.target}


# --------------------------------------------------------------------------- the seed's report


def fault_took_effect(row: dict[str, Any]) -> bool | None:
    """Whether the first launch failed (a rule stopped it or it missed the objective); None: the run errored."""
    if not row or "error" in row:
        return None
    return not (row.get("met_objective") and row.get("launches") == 1)


#: Faults in the data, which no hyperparameter of the zoo's scripts corrects (smaller steps only soften label noise),
#: and what the evidence set's end reason says when it names them (contracts.training_labels' findings).
DATA_FAULT_NAMES = {
    "rare_class": ("training labels are imbalanced",),
    "label_noise": ("training labels look noisy", "learns its training labels by heart"),
}


def verdict(runs: dict[str, dict[str, Any]], reference: dict[str, Any] | None, fault: str | None = None) -> dict[str, Any]:
    first = runs.get(EVIDENCE) or runs.get(RANDOM) or {}
    failing = fault_took_effect(first)
    result: dict[str, Any] = {"failing": failing}
    evidence = runs.get(EVIDENCE)
    if failing and evidence and not evidence.get("met_objective") and fault in DATA_FAULT_NAMES:
        # not repaired: did the run end saying what was wrong with the data?
        result["evidence_named_data_fault"] = any(name in (evidence.get("end_reason") or "")
                                                  for name in DATA_FAULT_NAMES[fault])
    for policy, row in runs.items():
        result[f"{policy}_repaired"] = bool(failing and row.get("met_objective"))
        check = row.get("held_out")
        result[f"{policy}_false_success"] = bool(row.get("met_objective") and not (check and check["meets"]))
    evidence = runs.get(EVIDENCE)
    if failing and evidence and evidence.get("met_objective") and reference and reference.get("training_steps"):
        result["compute_ratio"] = round(evidence["training_steps"] / reference["training_steps"], 2)
        result["reference_met_objective"] = bool(reference.get("met_objective"))
    return result


def totals(results: list[dict[str, Any]], twins: list[dict[str, Any]], policies: tuple[str, ...]) -> dict[str, Any]:
    """The seed's figures against the targets, per policy; ``results``: one per drawn configuration (``runs``,
    ``verdict``), ``twins``: the healthy twins' rows (evidence)."""
    failing = [r for r in results if r["verdict"]["failing"]]
    summary: dict[str, Any] = {
        "configurations": len(results),
        "failing": len(failing),
        "fault_ineffective": sum(r["verdict"]["failing"] is False for r in results),
        "errors": sum(r["verdict"]["failing"] is None for r in results),
        "healthy_twins_run": len(twins),
    }
    ran = [twin for twin in twins if "error" not in twin]
    alarms = [twin for twin in ran if twin.get("rules_fired")]
    summary["false_alarms"] = len(alarms)
    summary["false_alarm_rate"] = round(len(alarms) / len(ran), 3) if ran else None
    summary["healthy_twins_missing_objective"] = sum(not twin.get("met_objective") for twin in ran)
    for policy in policies:
        repaired = [r for r in failing if r["verdict"].get(f"{policy}_repaired")]
        launches = [r["runs"][policy]["launches"] for r in repaired]
        entry: dict[str, Any] = {
            "repaired": len(repaired),
            "repair_rate": round(len(repaired) / len(failing), 3) if failing else None,
            "median_launches": statistics.median(launches) if launches else None,
            "false_successes": sum(bool(r["verdict"].get(f"{policy}_false_success")) for r in results),
        }
        if policy == EVIDENCE:
            other = [r for r in failing if r["configuration"]["fault"] not in DATA_FAULT_NAMES]
            missed_data = [r for r in failing if "evidence_named_data_fault" in r["verdict"]]
            named = [r for r in missed_data if r["verdict"]["evidence_named_data_fault"]]
            entry.update(
                repaired_other_faults=sum(bool(r["verdict"].get(f"{policy}_repaired")) for r in other),
                failing_other_faults=len(other),
                data_faults_missed=len(missed_data),
                data_faults_named=len(named),
                data_faults_named_median_launches=(statistics.median(r["runs"][policy]["launches"] for r in named)
                                                   if named else None),
            )
            ratios = [r["verdict"]["compute_ratio"] for r in repaired if "compute_ratio" in r["verdict"]]
            entry.update(compute_ratio_median=statistics.median(ratios) if ratios else None,
                         compute_ratio_max=max(ratios) if ratios else None,
                         compute_ratio_within_target=sum(ratio <= repair_zoo.TARGET_COMPUTE_RATIO for ratio in ratios),
                         compute_ratios_measured=len(ratios))
        summary[policy] = entry
    summary["targets"] = {"repair_rate": repair_zoo.TARGET_REPAIR_RATE, "false_alarms": 0, "false_successes": 0,
                          "median_launches": repair_zoo.TARGET_MEDIAN_LAUNCHES,
                          "compute_ratio": repair_zoo.TARGET_COMPUTE_RATIO}
    return summary


def markdown(results: list[dict[str, Any]], twins: list[dict[str, Any]], policies: tuple[str, ...],
             summary: dict[str, Any]) -> str:
    def cell(run: dict[str, Any] | None) -> str:
        if not run:
            return ""
        if "error" in run:
            return "error"
        value = run.get("objective_value")
        shown = "n/a" if value is None else f"{value:.2f}"
        return f"{run['launches']} / {run['training_steps']} / {shown} {'met' if run['met_objective'] else 'missed'}"

    header = ("| configuration | base | fault | first launch: rule (step) | " + " | ".join(
        f"{policy}: launches / steps / objective" for policy in policies) + " | evidence remedies | compute ratio |")
    lines = [header, "|" + "---|" * (6 + len(policies))]
    for result in results:
        configuration, runs, judged = result["configuration"], result["runs"], result["verdict"]
        first = runs.get(EVIDENCE) or runs.get(RANDOM) or {}
        fired = first.get("first_rule") or ("none (met)" if judged["failing"] is False else "none")
        if first.get("first_issue_step") is not None:
            fired += f" ({first['first_issue_step']})"
        change = ", ".join(f"{key} -> {value}" for key, value in configuration["fault_change"].items())
        remedies = ", ".join(runs.get(EVIDENCE, {}).get("remedies") or []) or "-"
        ratio = judged.get("compute_ratio")
        lines.append(f"| {configuration['name']} | {configuration['description'].split('; fault')[0]} | "
                     f"{configuration['fault']}: {change} | {fired} | "
                     + " | ".join(cell(runs.get(policy)) for policy in policies)
                     + f" | {remedies} | {'' if ratio is None else f'{ratio:.2f}'} |")
    if twins:
        lines += ["", "| healthy twin | rules fired | launches / steps / objective |", "|---|---|---|"]
        for twin in twins:
            fired = ", ".join(twin.get("rules_fired") or []) or "none"
            lines.append(f"| {twin['configuration']} | {'error' if 'error' in twin else fired} | {cell(twin)} |")
    evidence = summary.get(EVIDENCE) or {}
    text = (f"\n{summary['failing']} of {summary['configurations']} drawn configurations failed at their first "
            f"launch ({summary['fault_ineffective']} faults left the objective met, {summary['errors']} errors). ")
    for policy in policies:
        entry = summary[policy]
        text += (f"{policy}: repaired {entry['repaired']} of {summary['failing']} (rate {entry['repair_rate']}, target "
                 f"{repair_zoo.TARGET_REPAIR_RATE}), median launches {entry['median_launches']} (target at most "
                 f"{repair_zoo.TARGET_MEDIAN_LAUNCHES}), false successes {entry['false_successes']}. ")
    if evidence:
        text += (f"Evidence, faults other than the data's ({', '.join(DATA_FAULT_NAMES)}): repaired "
                 f"{evidence['repaired_other_faults']} of {evidence['failing_other_faults']}; data faults not repaired: "
                 f"{evidence['data_faults_missed']}, of which the run ended naming the fault in "
                 f"{evidence['data_faults_named']} (median launches "
                 f"{evidence['data_faults_named_median_launches']}). ")
        text += (f"Evidence compute ratio: median {evidence['compute_ratio_median']}, max "
                 f"{evidence['compute_ratio_max']}, {evidence['compute_ratio_within_target']} of "
                 f"{evidence['compute_ratios_measured']} within {repair_zoo.TARGET_COMPUTE_RATIO}. ")
    text += (f"False alarms: {summary['false_alarms']} of {summary['healthy_twins_run']} healthy twins (rate "
             f"{summary['false_alarm_rate']}, target 0); healthy twins missing the objective: "
             f"{summary['healthy_twins_missing_objective']}.")
    return "\n".join(lines) + "\n" + text


def run_seed(seed: int, n: int, policies: tuple[str, ...], work: Path, workers: int, timeout: float,
             healthy_share: float = DEFAULT_HEALTHY_SHARE) -> tuple[dict[str, Any], str]:
    """Draw, run, judge one seed: (the JSON report, the markdown table)."""
    configurations = zoo_random.draw(seed, n)
    twins = zoo_random.healthy_twins(configurations, healthy_share)
    data_root = work / "data"
    for configuration in configurations:  # data first, once, before the runs race for it
        zoo_random.write_channels(configuration, False, data_root)
    for configuration in twins:
        zoo_random.write_channels(configuration, True, data_root)
    threads = max(1, (os.cpu_count() or 1) // max(1, workers))
    started = time.monotonic()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    by_name = {configuration.name: configuration for configuration in configurations}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        pending = {}
        for configuration in configurations:
            for policy in policies:
                runner = run_evidence if policy == EVIDENCE else run_random
                pending[pool.submit(runner, configuration, work, data_root, timeout, threads)] = (configuration.name, policy)
        for configuration in twins:
            future = pool.submit(run_evidence, configuration, work, data_root, timeout, threads, True)
            pending[future] = (configuration.name, "healthy")
        while pending:
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                name, policy = pending.pop(future)
                try:
                    rows[(name, policy)] = future.result()
                except subprocess.TimeoutExpired:
                    rows[(name, policy)] = {"policy": policy, "error": f"timed out after {timeout:g} s"}
                row = rows[(name, policy)]
                print(f"  {name} / {policy}: {row.get('error') or ('met' if row.get('met_objective') else 'missed')}"
                      f" after {row.get('launches')} launches", file=sys.stderr)
                final = row.get("final_run_spec")
                if policy == EVIDENCE and final is not None and fault_took_effect(row):
                    reference = pool.submit(run_evidence, by_name[name], work, data_root, timeout, threads, False, final)
                    pending[reference] = (name, REFERENCE)
    results = []
    for configuration in configurations:
        runs = {policy: rows[(configuration.name, policy)] for policy in policies}
        reference = rows.get((configuration.name, REFERENCE))
        result = {"configuration": configuration.to_json(), "runs": runs, "verdict": verdict(runs, reference, configuration.fault)}
        if reference is not None:
            result["reference"] = reference
        results.append(result)
    twin_rows = [{**rows[(configuration.name, "healthy")], "configuration": configuration.name} for configuration in twins]
    summary = {"seed": seed, **totals(results, twin_rows, policies), "policies": list(policies),
               "max_launches": MAX_LAUNCHES, "threads_per_job": threads,
               "wall_seconds": round(time.monotonic() - started, 1), "work_dir": str(work)}
    return ({"summary": summary, "configurations": results, "healthy_twins": twin_rows},
            markdown(results, twin_rows, policies, summary))
