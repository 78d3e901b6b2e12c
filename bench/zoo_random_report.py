"""The random repair zoo's report for one seed: each drawn configuration's verdict (did the fault take effect, was it
repaired, was a claimed success real), the seed's totals per policy against the targets, the same figures per model
family and per fault kind, and the markdown table. Pure arithmetic on the rows ``bench/zoo_random_run.py`` collects.
"""

from __future__ import annotations

import statistics
from typing import Any

import zoo_launch

EVIDENCE, RANDOM, REFERENCE = "evidence", "random", zoo_launch.REFERENCE
POLICIES = (EVIDENCE, RANDOM)


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
    # NaN in the targets: no hyperparameter repairs it; the run should end naming the targets (issue 46)
    "targets_nan": ("targets", "Targets", "target values"),
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
                         compute_ratio_within_target=sum(ratio <= zoo_launch.TARGET_COMPUTE_RATIO for ratio in ratios),
                         compute_ratios_measured=len(ratios))
        summary[policy] = entry
    summary["by_family"] = breakdown(results, twins, policies, "family")
    summary["by_fault"] = breakdown(results, twins, policies, "fault")
    summary["targets"] = {"repair_rate": zoo_launch.TARGET_REPAIR_RATE, "false_alarms": 0, "false_successes": 0,
                          "median_launches": zoo_launch.TARGET_MEDIAN_LAUNCHES,
                          "compute_ratio": zoo_launch.TARGET_COMPUTE_RATIO}
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
                 f"{zoo_launch.TARGET_REPAIR_RATE}), median launches {entry['median_launches']} (target at most "
                 f"{zoo_launch.TARGET_MEDIAN_LAUNCHES}), false successes {entry['false_successes']}. ")
    if evidence:
        text += (f"Evidence, faults other than the data's ({', '.join(DATA_FAULT_NAMES)}): repaired "
                 f"{evidence['repaired_other_faults']} of {evidence['failing_other_faults']}; data faults not repaired: "
                 f"{evidence['data_faults_missed']}, of which the run ended naming the fault in "
                 f"{evidence['data_faults_named']} (median launches "
                 f"{evidence['data_faults_named_median_launches']}). ")
        text += (f"Evidence compute ratio: median {evidence['compute_ratio_median']}, max "
                 f"{evidence['compute_ratio_max']}, {evidence['compute_ratio_within_target']} of "
                 f"{evidence['compute_ratios_measured']} within {zoo_launch.TARGET_COMPUTE_RATIO}. ")
    text += (f"False alarms: {summary['false_alarms']} of {summary['healthy_twins_run']} healthy twins (rate "
             f"{summary['false_alarm_rate']}, target 0); healthy twins missing the objective: "
             f"{summary['healthy_twins_missing_objective']}.")
    return "\n".join(lines) + "\n" + text + breakdown_markdown(summary, policies)


def breakdown(results: list[dict[str, Any]], twins: list[dict[str, Any]], policies: tuple[str, ...],
              key: str) -> dict[str, dict[str, Any]]:
    """The seed's figures per model family (``key`` "family") or per fault kind ("fault"): configurations, failing,
    faults that left the objective met, per policy the repaired share, median launches and false successes
    (evidence: the compute ratio's median too), and the healthy twins' false alarms."""
    def group_of(row: dict[str, Any]) -> str:
        return row.get(key) or row.get("configuration", {}).get(key) or "?"

    groups: dict[str, dict[str, Any]] = {}
    for name in sorted({group_of(r) for r in results} | {group_of(t) for t in twins}):
        rows = [r for r in results if group_of(r) == name]
        failing = [r for r in rows if r["verdict"]["failing"]]
        entry: dict[str, Any] = {"configurations": len(rows), "failing": len(failing),
                                 "fault_ineffective": sum(r["verdict"]["failing"] is False for r in rows),
                                 "errors": sum(r["verdict"]["failing"] is None for r in rows)}
        for policy in policies:
            repaired = [r for r in failing if r["verdict"].get(f"{policy}_repaired")]
            launches = [r["runs"][policy]["launches"] for r in repaired]
            figures: dict[str, Any] = {
                "repaired": len(repaired),
                "repair_rate": round(len(repaired) / len(failing), 3) if failing else None,
                "median_launches": statistics.median(launches) if launches else None,
                "false_successes": sum(bool(r["verdict"].get(f"{policy}_false_success")) for r in rows),
            }
            if policy == EVIDENCE:
                ratios = [r["verdict"]["compute_ratio"] for r in repaired if "compute_ratio" in r["verdict"]]
                figures["compute_ratio_median"] = statistics.median(ratios) if ratios else None
            entry[policy] = figures
        ran = [t for t in twins if group_of(t) == name and "error" not in t]
        entry["healthy_twins_run"] = len(ran)
        entry["false_alarms"] = sum(bool(t.get("rules_fired")) for t in ran)
        entry["healthy_twins_missing_objective"] = sum(not t.get("met_objective") for t in ran)
        groups[name] = entry
    return groups


def breakdown_markdown(summary: dict[str, Any], policies: tuple[str, ...]) -> str:
    """The per-family and per-fault figures as two tables."""
    lines = []
    for key, title in (("by_family", "family"), ("by_fault", "fault")):
        groups = summary.get(key) or {}
        if not groups:
            continue
        lines += ["", f"| {title} | drawn | failing | " + " | ".join(
            f"{policy}: repaired / median launches / false successes" for policy in policies)
            + " | evidence compute median | healthy twins: false alarms / run |",
            "|" + "---|" * (5 + len(policies))]
        for name, entry in groups.items():
            cells = [f"{entry[p]['repaired']} of {entry['failing']} / {entry[p]['median_launches']} / "
                     f"{entry[p]['false_successes']}" for p in policies]
            compute = (entry.get(EVIDENCE) or {}).get("compute_ratio_median")
            lines.append(f"| {name} | {entry['configurations']} | {entry['failing']} | " + " | ".join(cells)
                         + f" | {'' if compute is None else compute} | {entry['false_alarms']} / "
                         f"{entry['healthy_twins_run']} |")
    return "\n" + "\n".join(lines) if lines else ""


CSV_COLUMNS = ("seed", "space", "name", "family", "style", "fault", "description", "failing", "policy", "met_objective",
               "repaired", "false_success", "launches", "training_steps", "objective_value", "held_out_value",
               "first_rule", "first_issue_step", "rules_fired", "remedies", "compute_ratio")


def rejudge(report: dict[str, Any]) -> dict[str, Any]:
    """The report with every verdict and total computed again from its runs by this module's arithmetic (a report
    printed before a change of the arithmetic reads as today's would)."""
    seeds = []
    for seed_report in report["seeds"]:
        summary = seed_report["summary"]
        policies = tuple(summary["policies"])
        results = []
        for result in seed_report["configurations"]:
            fault = result["configuration"]["fault"]
            results.append({**result, "fault": result.get("fault", fault),
                             "verdict": verdict(result["runs"], result.get("reference"), fault)})
        twins = seed_report.get("healthy_twins") or []
        kept = {key: value for key, value in summary.items() if key in (
            "seed", "space", "policies", "max_launches", "threads_per_job", "wall_seconds", "work_dir", "command")}
        seeds.append({**seed_report, "configurations": results,
                      "summary": {**kept, **totals(results, twins, policies)}})
    return {**report, "seeds": seeds}


def csv_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per drawn configuration and policy, and one per healthy twin (policy "healthy_twin"), of the JSON
    report ``repair_zoo.py --random`` prints (``{"seeds": [...]}``)."""
    rows = []
    for seed_report in report["seeds"]:
        summary = seed_report["summary"]
        by_name = {}
        for result in seed_report["configurations"]:
            configuration, judged = result["configuration"], result["verdict"]
            by_name[configuration["name"]] = configuration
            for policy, run in result["runs"].items():
                rows.append({
                    "seed": summary["seed"], "space": summary.get("space", "v1"), "name": configuration["name"],
                    "family": result.get("family"), "style": configuration["style"], "fault": configuration["fault"],
                    "description": configuration["description"], "failing": judged["failing"], "policy": policy,
                    "met_objective": run.get("met_objective"), "repaired": judged.get(f"{policy}_repaired"),
                    "false_success": judged.get(f"{policy}_false_success"), "launches": run.get("launches"),
                    "training_steps": run.get("training_steps"), "objective_value": run.get("objective_value"),
                    "held_out_value": (run.get("held_out") or {}).get("value"), "first_rule": run.get("first_rule"),
                    "first_issue_step": run.get("first_issue_step"),
                    "rules_fired": " ".join(run.get("rules_fired") or []),
                    "remedies": " ".join(run.get("remedies") or []),
                    "compute_ratio": judged.get("compute_ratio") if policy == EVIDENCE else None,
                })
        for twin in seed_report.get("healthy_twins") or []:
            configuration = by_name.get(twin["configuration"], {})
            rows.append({
                "seed": summary["seed"], "space": summary.get("space", "v1"), "name": twin["configuration"],
                "family": twin.get("family"), "style": configuration.get("style"), "fault": twin.get("fault"),
                "description": configuration.get("description"), "failing": False, "policy": "healthy_twin",
                "met_objective": twin.get("met_objective"), "launches": twin.get("launches"),
                "training_steps": twin.get("training_steps"), "objective_value": twin.get("objective_value"),
                "first_rule": twin.get("first_rule"), "first_issue_step": twin.get("first_issue_step"),
                "rules_fired": " ".join(twin.get("rules_fired") or []), "remedies": " ".join(twin.get("remedies") or []),
            })
    return rows


SUMMARY_COLUMNS = ("seed", "space", "commit", "group_kind", "group", "policy", "configurations", "failing",
                   "fault_ineffective", "repaired", "repair_rate", "median_launches", "false_successes",
                   "compute_ratio_median", "healthy_twins", "false_alarms", "command")


def summary_rows(report: dict[str, Any], commit: str = "") -> list[dict[str, Any]]:
    """Per seed, the figures of the whole draw, of each model family and of each fault kind, one row per policy."""
    rows = []
    for seed_report in report["seeds"]:
        summary = seed_report["summary"]
        groups = [("all", "all", summary)]
        groups += [(kind, name, entry) for kind, key in (("family", "by_family"), ("fault", "by_fault"))
                   for name, entry in (summary.get(key) or {}).items()]
        for kind, name, entry in groups:
            for policy in summary["policies"]:
                figures = entry[policy]
                rows.append({
                    "seed": summary["seed"], "space": summary.get("space", "v1"), "commit": commit,
                    "group_kind": kind, "group": name, "policy": policy, "configurations": entry["configurations"],
                    "failing": entry["failing"], "fault_ineffective": entry["fault_ineffective"],
                    "repaired": figures["repaired"], "repair_rate": figures["repair_rate"],
                    "median_launches": figures["median_launches"], "false_successes": figures["false_successes"],
                    "compute_ratio_median": figures.get("compute_ratio_median"),
                    "healthy_twins": entry["healthy_twins_run"], "false_alarms": entry["false_alarms"],
                    "command": summary.get("command", ""),
                })
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python bench/zoo_random_report.py REPORT.json --csv OUT.csv [--summary-csv OUT.csv --commit C]``: a printed
    report as CSV tables (appended to when the file exists), its verdicts and totals computed again (``rejudge``)."""
    import argparse
    import csv
    import json
    from pathlib import Path

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("report", type=Path, help="the JSON that bench/repair_zoo.py --random printed")
    parser.add_argument("--csv", type=Path, help="one row per configuration and policy, and per healthy twin")
    parser.add_argument("--summary-csv", type=Path, help="per seed: the whole draw, each family, each fault")
    parser.add_argument("--commit", default="", help="the product commit the report measured (--summary-csv)")
    arguments = parser.parse_args(argv)
    if not (arguments.csv or arguments.summary_csv):
        parser.error("give --csv, --summary-csv or both")
    report = rejudge(json.loads(arguments.report.read_text()))
    for path, columns, make_rows in ((arguments.csv, CSV_COLUMNS, lambda: csv_rows(report)),
                                     (arguments.summary_csv, SUMMARY_COLUMNS, lambda: summary_rows(report, arguments.commit))):
        if path is None:
            continue
        rows = make_rows()
        new_file = not path.exists()
        with path.open("a", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=columns)
            if new_file:
                writer.writeheader()
            writer.writerows(rows)
        print(f"{len(rows)} rows -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
