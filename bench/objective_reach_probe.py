"""The objective's course of whole jobs, for ObjectiveOutOfReach's projection (decision record 170): each job runs all
its epochs through the job launcher (what SageMaker's script mode runs) with ObjectiveOutOfReach judging but never
stopping, and the held-out metric it reported once per epoch is kept. The courses are then replayed offline through
``contracts.objective_reach.judge_reach`` at every epoch, so a projection can be measured on healthy runs (which must
never be judged out of reach) and on runs that miss (how early they are judged), without rerunning any training.

    python bench/objective_reach_probe.py record --zoo-seeds 20 21 --n 12 --space v1 --out courses.jsonl
    python bench/objective_reach_probe.py record --corpus-seeds 0 2 --out courses.jsonl
    python bench/objective_reach_probe.py replay courses.jsonl
    git show main:contracts/objective_reach.py > /tmp/reach_before.py
    python bench/objective_reach_probe.py replay courses.jsonl --judge /tmp/reach_before.py   # another version's judge

Development seeds only (record 025): the random zoo's below 1000 or 2000-2999, the healthy corpus's but 7 and 8.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from contracts.job import (  # noqa: E402
    ENTRY_POINT_HYPERPARAMETER,
    HOOK_CONFIG_HYPERPARAMETER,
    METRIC_DEFINITIONS_HYPERPARAMETER,
    RULE_CONFIGS_HYPERPARAMETER,
)
from contracts.objective import Objective  # noqa: E402
from contracts.objective_reach import judge_reach  # noqa: E402
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument  # noqa: E402

REPORT_ZOO_SEEDS = range(1000, 2000)
RESERVED_ZOO_SEEDS = 3000


def _rules(objective: dict[str, Any], planned: int) -> list[dict[str, Any]]:
    return [{"RuleConfigurationName": "ObjectiveOutOfReach",
             "RuleParameters": {"rule_to_invoke": "ObjectiveOutOfReach", "objective": json.dumps(objective),
                                "planned_epochs": str(planned)}}]


def run_course(label: str, script_dir: Path, entry_point: str, arguments: list[str], channels: dict[str, Path],
               objective: dict[str, Any], planned: int, definitions: list[dict[str, str]] | None, work: Path,
               timeout: float) -> dict[str, Any]:
    """One job through the launcher, every epoch; its objective course from the rule-status document."""
    job_dir = work / label
    debug_dir = job_dir / "debug-output"
    hook = {"S3OutputPath": "s3://probe/debug-output", "HookParameters": {"save_interval": "10"},
            "CollectionConfigurations": [{"CollectionName": "losses"}]}
    reserved = [f"--{ENTRY_POINT_HYPERPARAMETER}", entry_point, f"--{HOOK_CONFIG_HYPERPARAMETER}", json.dumps(hook),
                f"--{RULE_CONFIGS_HYPERPARAMETER}", json.dumps(_rules(objective, planned))]
    if definitions:
        reserved += [f"--{METRIC_DEFINITIONS_HYPERPARAMETER}", json.dumps(definitions)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DEBUG_OUTPUT_DIR": str(debug_dir), "DEBUG_OUTPUT_S3_SYNC": "off",
           "TRAINING_JOB_NAME": label.replace("_", "-")[:63], "TRAINING_FAILURE_FILE": str(job_dir / "failure"),
           "OMP_NUM_THREADS": "1",
           **{f"SM_CHANNEL_{name.upper()}": str(path) for name, path in channels.items()}}
    job_dir.mkdir(parents=True, exist_ok=True)
    launcher = f"import sys; from debugger.launcher import main; main({str(script_dir)!r})"
    with open(job_dir / "log.txt", "w") as log:
        finished = subprocess.run([sys.executable, "-c", launcher, *reserved, *arguments], cwd=script_dir, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
    row: dict[str, Any] = {"label": label, "objective": objective, "planned": planned, "exit_code": finished.returncode}
    status_file = debug_dir / RULE_STATUS_FILE
    if not status_file.exists():
        return {**row, "error": (job_dir / "log.txt").read_text(errors="replace")[-600:]}
    document = RuleStatusDocument.from_json(status_file.read_text())
    metric = document.metrics.get(objective["metric_name"])
    row["values"] = [] if metric is None or metric.values is None else metric.values
    row["rule_details"] = document.rules[0].StatusDetails if document.rules else ""
    return row


def check_development_seed(seed: int) -> None:
    if seed in REPORT_ZOO_SEEDS or seed >= RESERVED_ZOO_SEEDS:
        raise SystemExit(f"seed {seed} is a report seed (decision record 025): use a development seed")


def zoo_jobs(seeds: list[int], n: int, space: str, data_root: Path, first: int = 0,
             only: list[str] | None = None, healthy_only: bool = False) -> list[dict[str, Any]]:
    """The configurations of ``seeds`` (``n`` each from ``first``), or ``only`` ("seed:index"), each faulty and
    healthy (``healthy_only``: the healthy twin alone)."""
    import zoo_random

    drawn = []
    for seed in seeds:
        check_development_seed(seed)
        drawn += zoo_random.draw(seed, n, space)[first:]
    for pick in only or ():
        seed, index = (int(part) for part in pick.split(":"))
        check_development_seed(seed)
        drawn.append(zoo_random.draw(seed, index + 1, space)[index])
    jobs = []
    for configuration in drawn:
            style = zoo_random.ALL_STYLES[configuration.style]
            for healthy in ((True,) if healthy_only else (False, True)):
                settings = configuration.settings(healthy)
                spec = configuration.execution_input(healthy)
                hyperparameters = spec["hyperparameters"]
                arguments = [item for name, value in hyperparameters.items() for item in (f"--{name}", str(value))]
                channels = zoo_random.write_channels(configuration, healthy, data_root)
                epochs_name = style.names.get("num_epochs", "epochs")
                jobs.append(dict(
                    label=f"{configuration.name}{'-healthy' if healthy else ''}", script_dir=ROOT / style.source_dir,
                    entry_point=style.entry_point, arguments=arguments, channels=channels,
                    objective=spec["objective"], planned=int(hyperparameters.get(epochs_name, settings["epochs"])),
                    definitions=spec.get("metric_definitions"),
                    meta={"healthy": healthy, "fault": configuration.fault, "family": configuration.family,
                          "description": configuration.describe()}))
    return jobs


def corpus_jobs(seeds: list[int], data_root: Path, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    import healthy_corpus

    jobs = []
    for seed in seeds:
        if seed in healthy_corpus.REPORT_SEEDS:
            raise SystemExit(f"seed {seed} is a healthy-corpus report seed (decision record 025)")
        for configuration in healthy_corpus.CONFIGURATIONS:
            if "epochs" not in configuration.hyperparameters or configuration.name.startswith(skip):
                continue
            arguments = ["--seed", str(seed)]
            for name, value in configuration.hyperparameters.items():
                arguments += [f"--{name.replace('_', '-')}", str(value)]
            jobs.append(dict(
                label=f"corpus-{configuration.name}-{seed}", script_dir=healthy_corpus.SCRIPTS,
                entry_point=configuration.script, arguments=arguments,
                channels=healthy_corpus.write_data(configuration.dataset, seed, data_root),
                objective={"metric_name": configuration.metric, "type": "Maximize",
                           "target_value": configuration.target},
                planned=int(configuration.hyperparameters["epochs"]), definitions=None,
                meta={"healthy": True, "fault": None, "family": "corpus", "description": configuration.name}))
    return jobs


def record(arguments: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="reach-probe-"))
    data_root = work / "data"
    jobs = []
    if arguments.zoo_seeds or arguments.only:
        jobs += zoo_jobs(arguments.zoo_seeds, arguments.n, arguments.space, data_root, arguments.first,
                         arguments.only, arguments.healthy_only)
    if arguments.corpus_seeds:
        jobs += corpus_jobs(arguments.corpus_seeds, data_root, tuple(arguments.corpus_skip))
    out = Path(arguments.out)
    with concurrent.futures.ThreadPoolExecutor(arguments.workers) as pool, out.open("a") as handle:
        futures = {pool.submit(run_course, **{key: value for key, value in job.items() if key != "meta"},
                               work=work, timeout=arguments.timeout): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            job = futures[future]
            try:
                row = {**future.result(), **job["meta"]}
            except Exception as error:  # a timeout: kept as a row, never silently dropped
                row = {"label": job["label"], "error": repr(error), **job["meta"]}
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            print(row["label"], len(row.get("values") or []), row.get("error", "")[:200], file=sys.stderr, flush=True)
    return 0


def _margin(objective: Objective, values: list[float], planned: int, judge=judge_reach) -> float | None:
    """How close a course came to being judged out of reach: the largest (target - projection) over its judged
    reports, as a share of the target's magnitude (above 0: it was judged out of reach), the projection uncapped by the
    metric's bound (so the margin stays readable near it)."""
    unbounded = dataclasses.replace(objective, bound=None)
    margins = []
    for reports in range(1, len(values) + 1):
        with _no_bound():
            reach = judge(unbounded, values[:reports], planned)
        if reach is not None and not reach.near_miss:
            margins.append(objective.sign * (objective.target_value - reach.projected) / abs(objective.target_value))
    return max(margins) if margins else None


class _no_bound:
    def __enter__(self):
        self.saved = Objective.bound_for
        Objective.bound_for = lambda objective, values=(): None

    def __exit__(self, *exc):
        Objective.bound_for = self.saved


def replay(rows: list[dict[str, Any]], judge=judge_reach) -> dict[str, Any]:
    """Every whole course (one report per planned epoch) judged at every epoch, as the rule judges it: healthy courses
    (the objective met at some epoch) must never be judged out of reach; courses that missed should be, early."""
    met, false_alarms, missed, stopped, saved, shares, closest = 0, [], 0, 0, 0.0, [], []
    for row in rows:
        values = row.get("values") or []
        if "error" in row or len(values) != row.get("planned") or any(value is None for value in values):
            continue
        objective = Objective.from_json(row["objective"])
        planned = row["planned"]
        first = None
        for reports in range(1, len(values) + 1):
            reach = judge(objective, values[:reports], planned)
            if reach is not None and reach.out_of_reach:
                first = reports
                break
        if any(objective.met(value) for value in values):
            met += 1
            if first is not None:
                false_alarms.append((row["label"], first))
            margin = _margin(objective, values, planned, judge)
            if margin is not None:
                closest.append((round(margin, 3), row["label"]))
        else:
            missed += 1
            if first is not None:
                stopped += 1
                shares.append(first / planned)
                saved += 1 - first / planned
    shares.sort()
    return {"met": met, "false_alarms": false_alarms, "missed": missed, "missed_stopped": stopped,
            "median_share_at_stop": shares[len(shares) // 2] if shares else None,
            "share_of_missed_epochs_saved": round(saved / max(1, missed), 3),
            "closest_healthy": sorted(closest, reverse=True)[:3]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    recording = commands.add_parser("record")
    recording.add_argument("--zoo-seeds", type=int, nargs="*", default=[])
    recording.add_argument("--n", type=int, default=12)
    recording.add_argument("--space", default="v1")
    recording.add_argument("--corpus-seeds", type=int, nargs="*", default=[])
    recording.add_argument("--corpus-skip", nargs="*", default=[], help="configuration name prefixes left out")
    recording.add_argument("--first", type=int, default=0, help="the zoo's configurations from this index on")
    recording.add_argument("--only", nargs="*", default=[], help="zoo configurations as seed:index")
    recording.add_argument("--healthy-only", action="store_true", help="the zoo configurations' healthy twins alone")
    recording.add_argument("--workers", type=int, default=1)
    recording.add_argument("--timeout", type=float, default=900)
    recording.add_argument("--out", required=True)
    replaying = commands.add_parser("replay")
    replaying.add_argument("courses", nargs="+")
    replaying.add_argument("--judge", help="a file holding another version's judge_reach (contracts.objective_reach)")
    arguments = parser.parse_args(argv)
    if arguments.command == "record":
        return record(arguments)
    rows = [json.loads(line) for path in arguments.courses for line in Path(path).read_text().splitlines() if line]
    judge = judge_reach
    if arguments.judge:
        spec = importlib.util.spec_from_file_location("other_reach", arguments.judge)
        module = importlib.util.module_from_spec(spec)
        sys.modules["other_reach"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        judge = module.judge_reach
    print(json.dumps(replay(rows, judge), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
