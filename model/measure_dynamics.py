"""Measure the reference training dynamics by running real jobs (``python -m model.train``).

For each seed: synthetic channels (``write_synthetic_channels`` defaults, data
seed = seed), then ResNet-20 without batch norm at warmup 0.1 (expected to
explode in the first steps) and with batch norm at warmup 0.1 for 2 epochs
(expected to learn). Prints one JSON document: per run the step of the first
non-finite gradient, initial loss and gradient norm, final loss, held-out
accuracy, seconds per step and whole-job wall time.

    python -m model.measure_dynamics --seeds 0 1 2 --out runs/dynamics
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from contracts.progress_log import parse_progress_line
from model.data import DEFAULT_NOISE, write_synthetic_channels

SCENARIOS = {
    "no_batch_norm": ["--warmup_learning_rate", "0.1", "--add_batch_norm", "false", "--num_epochs", "2"],
    "batch_norm": ["--warmup_learning_rate", "0.1", "--add_batch_norm", "true", "--num_epochs", "2"],
}


def run_job(scenario: str, seed: int, channels: dict[str, Path], work_dir: Path, threads: int) -> dict[str, Any]:
    job_dir = work_dir / f"{scenario}-seed{seed}"
    environment = dict(os.environ)
    environment.update(
        SM_CHANNEL_TRAIN=str(channels["train"]),
        SM_CHANNEL_TEST=str(channels["test"]),
        SM_MODEL_DIR=str(job_dir / "model"),
        SM_INPUT_CONFIG_DIR=str(job_dir / "config"),
        TRAINING_CHECKPOINT_DIR=str(job_dir / "checkpoints"),
        TRAINING_FAILURE_FILE=str(job_dir / "failure"),
        TRAINING_JOB_NAME=f"dynamics-{scenario}-seed{seed}",
        TRAINING_NUM_THREADS=str(threads),
        DEBUG_OUTPUT_DIR=str(job_dir / "debug-output"),
        DEBUG_OUTPUT_S3_SYNC="off",
    )
    environment.pop("SM_HPS", None)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "model.train", *SCENARIOS[scenario], "--seed", str(seed)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines = []
    step_arrivals = []  # when each step line arrived: consecutive ones inside an epoch give the step time
    for raw in process.stdout:
        parsed = parse_progress_line(raw)
        if parsed:
            lines.append(parsed)
            if parsed["kind"] == "training_step":
                step_arrivals.append((parsed["epoch"], time.monotonic()))
    exit_code = process.wait()
    wall_seconds = time.monotonic() - started
    steps = [line for line in lines if line["kind"] == "training_step"]
    step_seconds = [
        later - earlier
        for (epoch, earlier), (next_epoch, later) in itertools.pairwise(step_arrivals)
        if epoch == next_epoch
    ]
    epochs = [line for line in lines if line["kind"] == "epoch_end"]
    first_non_finite = next((line["step"] for line in steps if not math.isfinite(line["gradient_norm"])), None)
    failure_file = job_dir / "failure"
    return {
        "scenario": scenario,
        "seed": seed,
        "exit_code": exit_code,
        "failure": failure_file.read_text() if failure_file.exists() else None,
        "steps_run": len(steps),
        "first_non_finite_gradient_step": first_non_finite,
        "initial_loss": steps[0]["loss"] if steps else None,
        "initial_gradient_norm": steps[0]["gradient_norm"] if steps else None,
        "final_train_loss": epochs[-1]["train_loss"] if epochs else None,
        "final_test_loss": epochs[-1]["test_loss"] if epochs else None,
        "final_test_accuracy": epochs[-1]["test_accuracy"] if epochs else None,
        "median_seconds_per_step": round(statistics.median(step_seconds), 3) if step_seconds else None,
        "wall_seconds": round(wall_seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m model.measure_dynamics", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=Path("runs/dynamics"))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--noise", type=float, default=DEFAULT_NOISE, help="synthetic pixel noise (0-255 units)")
    parser.add_argument("--scenarios", nargs="+", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    arguments = parser.parse_args(argv)
    runs = []
    for seed in arguments.seeds:
        channels = write_synthetic_channels(arguments.out / f"data-seed{seed}", seed=seed, noise=arguments.noise)
        for scenario in arguments.scenarios:
            result = run_job(scenario, seed, channels, arguments.out, arguments.threads)
            print(json.dumps(result), file=sys.stderr, flush=True)
            runs.append(result)
    summary = {"noise": arguments.noise, "runs": runs}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
