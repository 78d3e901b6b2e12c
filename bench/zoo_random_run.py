"""The random repair zoo's run and report (``python bench/repair_zoo.py --random N --seed S``): the configurations
``bench/zoo_random.py`` draws, each run through ``remediate local run`` (``zoo_launch.launch``) under

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
import functools
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import zoo_launch
import zoo_random
from zoo_random import ALL_STYLES as STYLES
from zoo_random import DrawnConfiguration
from zoo_random_report import EVIDENCE, RANDOM, REFERENCE, fault_took_effect, markdown, totals, verdict

if str(zoo_launch.ROOT) not in sys.path:  # contracts/ and lambdas/, for the evidence set's changes
    sys.path.append(str(zoo_launch.ROOT))

MAX_LAUNCHES = zoo_launch.MAX_LAUNCHES
DEFAULT_HEALTHY_SHARE = 0.25
#: The scripts' optimizer names -> the names the debugger reports (the evidence set's rate ranges are per optimizer).
OPTIMIZER_NAMES = {"sgd": "SGD", "adam": "Adam", "rmsprop": "RMSprop", "adamw": "AdamW"}


# --------------------------------------------------------------------------- one configuration


def _channel_options(configuration: DrawnConfiguration, healthy: bool, data_root: Path) -> list[str]:
    channels = zoo_random.write_channels(configuration, healthy, data_root)
    return [option for name, directory in channels.items() for option in ("--channel", f"{name}={directory}")]


def run_evidence(configuration: DrawnConfiguration, work: Path, data_root: Path, timeout: float, threads: int,
                 healthy: bool = False, final_run_spec: dict[str, Any] | None = None,
                 extra_input: dict[str, Any] | None = None) -> dict[str, Any]:
    """The evidence policy on the configuration (or its healthy twin); with ``final_run_spec``: the reference run,
    one launch from step 0 of the configuration a repaired run ended with; ``extra_input``: execution-input keys
    every run of the seed takes (e.g. allow_loss_changes)."""
    spec = {**configuration.execution_input(healthy), **(extra_input or {})}
    if final_run_spec is not None:
        spec.update(final_run_spec)
    spec["max_num_retraining"] = 1 if final_run_spec is not None else MAX_LAUNCHES
    policy = REFERENCE if final_run_spec is not None else EVIDENCE
    label = f"{configuration.name}{'-healthy' if healthy else ''}-{policy}"
    row = zoo_launch.launch(spec, label, policy, work, timeout, threads,
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
        row = zoo_launch.launch(spec, f"{configuration.name}-random-{number}", RANDOM, work, timeout, threads, options)
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
    optimizer = hyperparameters[style.knobs["optimizer"]] if "optimizer" in style.knobs else style.optimizers[0]
    rates = range_for(OPTIMIZER_NAMES[optimizer], float(hyperparameters[style.knobs["lr"]]))
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
        if "width" in knobs:
            put(f"width x{factor:g}", knobs["width"], max(4, int(hyperparameters[knobs["width"]] * factor)))
    if "depth" in knobs:
        depth = hyperparameters[knobs["depth"]]
        put("depth +1", knobs["depth"], depth + 1)
        if depth > 1:
            put("depth -1", knobs["depth"], depth - 1)
    for activation in style.activations if "activation" in knobs else ():
        put(f"activation {activation}", knobs["activation"], activation)
    for norm in style.norms if "norm" in knobs else ():
        value = norm if style.name in ("mlp_smd", "cnn_smd") else (norm == "batch")
        value = int(value) if style.name == "logline" else value
        put(f"norm {norm}", knobs["norm"], value)
    for optimizer in style.optimizers if "optimizer" in knobs else ():
        put(f"optimizer {optimizer}", knobs["optimizer"], optimizer)
    if "clip" in knobs:  # gradient clipping on or off
        put("clip 1" if not hyperparameters[knobs["clip"]] else "clip off", knobs["clip"],
            0.0 if hyperparameters[knobs["clip"]] else 1.0)
    for name in ("cell", "loss"):
        if name in knobs:
            for choice in {"cell": ("gru", "lstm"), "loss": ("mse", "huber")}[name]:
                put(f"{name} {choice}", knobs[name], choice)
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
    """For a run that claims it met its objective: the last held-out metric its successful job's script logged (its
    own log format, read here), and whether that meets the target. None for a run that claims nothing."""
    if not row.get("met_objective"):
        return None
    style = STYLES[configuration.style]
    job = row.get("successful_job")
    log = Path(row["run_dir"]) / "jobs" / job / "training.log" if job and row.get("run_dir") else None
    if log is None or not log.exists():
        return {"value": None, "meets": False, "why": f"no log for the successful job {job!r}"}
    found = re.findall(style.held_out_pattern(configuration.settings()), log.read_text(errors="replace"))
    if not found:
        return {"value": None, "meets": False, "why": f"no held-out metric in {log}"}
    value = float(found[-1]) / (100 if style.held_out_percent else 1)
    return {"value": round(value, 4), "meets": configuration.meets(value)}


# --------------------------------------------------------------------------- the seed


def run_seed(seed: int, n: int, policies: tuple[str, ...], work: Path, workers: int, timeout: float,
             healthy_share: float = DEFAULT_HEALTHY_SHARE, space: str = "v1",
             extra_input: dict[str, Any] | None = None, styles: frozenset[str] = frozenset()) -> tuple[dict[str, Any], str]:
    """Draw, run, judge one seed of ``space``: (the JSON report, the markdown table); ``extra_input``: keys every
    evidence run's execution input takes; ``styles``: only the drawn configurations of these script styles or model
    families (the drawing is the seed's whole, so each keeps its name)."""
    run_evidence_here = functools.partial(run_evidence, extra_input=extra_input)
    configurations = [configuration for configuration in zoo_random.draw(seed, n, space)
                      if not styles or styles & {configuration.style, configuration.family}]
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
                runner = run_evidence_here if policy == EVIDENCE else run_random
                pending[pool.submit(runner, configuration, work, data_root, timeout, threads)] = (configuration.name, policy)
        for configuration in twins:
            future = pool.submit(run_evidence_here, configuration, work, data_root, timeout, threads, True)
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
                    reference = pool.submit(run_evidence_here, by_name[name], work, data_root, timeout, threads, False,
                                            final)
                    pending[reference] = (name, REFERENCE)
    results = []
    for configuration in configurations:
        runs = {policy: rows[(configuration.name, policy)] for policy in policies}
        reference = rows.get((configuration.name, REFERENCE))
        result = {"configuration": configuration.to_json(), "family": configuration.family, "fault": configuration.fault,
                  "runs": runs, "verdict": verdict(runs, reference, configuration.fault)}
        if reference is not None:
            result["reference"] = reference
        results.append(result)
    twin_rows = [{**rows[(configuration.name, "healthy")], "configuration": configuration.name,
                  "family": configuration.family, "fault": configuration.fault} for configuration in twins]
    summary = {"seed": seed, "space": space, **totals(results, twin_rows, policies), "policies": list(policies),
               "max_launches": MAX_LAUNCHES, "threads_per_job": threads,
               "wall_seconds": round(time.monotonic() - started, 1), "work_dir": str(work)}
    return ({"summary": summary, "configurations": results, "healthy_twins": twin_rows},
            markdown(results, twin_rows, policies, summary))
