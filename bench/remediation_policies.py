"""The reference scenario under the anchor and the evidence policies, side by side; prints JSON.

Each policy runs ``remediate local run --json`` once (a fresh process, real training on
generated data) with the same execution input. Per policy: launches until a job
completed, total training steps, wall seconds, the completed job's held-out
accuracy, and the orchestration overhead (wall time not spent inside training
processes: moto's interpreter, the handlers, the Wait states, process start-up
bookkeeping, data upload).

    python bench/remediation_policies.py [--runs-dir DIR] [--train-samples N] [--run-spec FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLICIES = ("anchor", "evidence")
FIELDS = (
    "execution_status",
    "launches",
    "launches_until_success",
    "successful_job",
    "held_out_accuracy",
    "total_training_steps",
    "wall_seconds",
    "training_process_seconds",
    "orchestration_overhead_seconds",
)


def run_policy(policy: str, runs_dir: Path, arguments: argparse.Namespace) -> dict:
    command = [
        sys.executable,
        "-m",
        "remediate.main",
        "local",
        "run",
        "--json",
        "--policy",
        policy,
        "--run-dir",
        str(runs_dir / policy),
        "--train-samples",
        str(arguments.train_samples),
    ]
    if arguments.run_spec:
        command += ["--run-spec", str(arguments.run_spec)]
    started = time.monotonic()
    finished = subprocess.run(command, capture_output=True, text=True, timeout=arguments.timeout)
    if finished.returncode not in (0, 1):
        raise SystemExit(f"{policy}: exit {finished.returncode}\n{finished.stderr[-3000:]}")
    summary = json.loads(finished.stdout)
    result = {field: summary.get(field) for field in FIELDS}
    result["cli_wall_seconds"] = round(time.monotonic() - started, 3)
    result["ladder"] = [
        {
            "warmup_learning_rate": row["hyperparameters"].get("warmup_learning_rate"),
            "learning_rate": row["hyperparameters"].get("learning_rate"),
            "add_batch_norm": row["hyperparameters"].get("add_batch_norm"),
            "outcome": row.get("outcome") or row.get("status"),
            "rule": row.get("rule"),
            "issue_step": row.get("issue_step"),
            "training_steps": row.get("training_steps"),
        }
        for row in summary["attempts"]
    ]
    result["run_dir"] = summary["run_dir"]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-dir", type=Path, help="where the two run directories go (default: a temp dir)")
    parser.add_argument("--train-samples", type=int, default=2560)
    parser.add_argument("--run-spec", type=Path, help="execution input JSON shared by both policies")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds per policy")
    arguments = parser.parse_args(argv)
    runs_dir = arguments.runs_dir or Path(tempfile.mkdtemp(prefix="remediation-bench-"))
    results = {policy: run_policy(policy, runs_dir, arguments) for policy in POLICIES}
    report = {
        "scenario": {
            "description": "the reference scenario unless --run-spec changes it: ResNet-20 with ELU, no batch norm, "
            "warmup LR 0.1 for one epoch then 0.1, batch 128, 2 epochs, generated data",
            "train_samples": arguments.train_samples,
            "run_spec": json.loads(arguments.run_spec.read_text()) if arguments.run_spec else {},
        },
        "policies": results,
        "targets": {
            "evidence_completes_within_2_launches": results["evidence"]["launches_until_success"] is not None
            and results["evidence"]["launches_until_success"] <= 2,
        },
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
