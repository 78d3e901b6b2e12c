"""Make the real training trajectories the rule tests replay: small jobs of the healthy corpus's scripts
(bench/healthy_scripts/, written as independent users write them), run through the job launcher as SageMaker's script
mode runs them, with our debugger.

    python tests/debugger/rules/trajectories/make_trajectories.py      # rewrites the files beside this script (about a minute)
    python tests/debugger/rules/trajectories/make_trajectories.py mlp_tanh_digits     # only that recording

* ``bias_before_batchnorm/``: the saved trial of an MLP whose Linear layer keeps its bias before BatchNorm1d
  (PyTorch's default), on generated tabular data: gradients, weights and biases at steps 0 and 10, the hook's
  ``silent_tensors.json`` and its rule-status document (VanishingGradient at its documented threshold).
* ``*.jsonl.gz``: what the loss-curve rules read at every step of a real job (each loss with its mode and mode step,
  and the latest value of the script's metric), recorded in the job by ``loss_recorder.py``:
  ``mlp_tanh_digits`` (the issue's healthy tanh MLP: digits, SGD, 20 epochs, reaches 0.99),
  ``mlp_batch16_tabular`` (SGD on batches of 16: a noisy minibatch loss; 2 epochs; ``_seed2``: its first epoch with
  seed 2, whose loss makes no new minimum from step 2 to step 7),
  ``mlp_batch512_tabular`` (Adam on batches of 512, 60 epochs: held-out accuracy 0.91 from epoch 8 on, while the
  held-out loss creeps up from 0.24 to 0.38),
  ``cnn_digits_global_mode`` (a CNN whose script never calls set_mode: its evaluation losses sit among the training
  losses, as global steps); ``cnn_images_converged`` (a CNN with batch norm, SGD and a step schedule on the built-in
  ResNet's pictures: accuracy 1.0, its training loss down to 1e-5), with, at every saved step, each gradient
  tensor's mean |g| (all VanishingGradient compares), the total gradient norm at every step, and the tensors the
  hook found cannot carry a signal; ``_seed6``: its first 3 epochs with seed 6, where some batches are fit exactly
  (a loss of 0.0 in float32, a total gradient norm of 1e-10);
  ``logline_tabular_sgd`` (the random repair zoo's plain script, bench/zoo_scripts/tabular_logline.py, as its seed
  1005, configuration 12's healthy twin runs it: two ReLU layers, SGD 0.05 with momentum on raw-unit tabular data,
  12 epochs, held-out accuracy 0.92; its training loss falls from 0.77 to 0.03 and, on the same minibatches at
  every rate, jumps back to 0.07 at step 426); ``smd_digits_frozen`` (development seed 24, configuration 34 of the
  random zoo with its fault: bench/zoo_scripts/digits_smd.py at SGD 5e-7, a loss that never moves) and
  ``logline_digits_sigmoid`` (seed 24, configuration 2: a 3x64 sigmoid stack, SGD 0.05, whose loss starts slowly and
  which meets its objective, 0.925).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import healthy_corpus  # noqa: E402  (bench/healthy_corpus.py: its data sets and scripts)
import zoo_random  # noqa: E402  (bench/zoo_random.py: the random repair zoo's configurations)

SEED = 0
RECORDED = {
    "mlp_tanh_digits": ("mlp_train.py", "digits", {"activation": "tanh", "optimizer": "sgd", "lr": 0.05, "epochs": 20}),
    "mlp_batch16_tabular": ("mlp_train.py", "tabular", {"activation": "relu", "batch-size": 16, "optimizer": "sgd",
                                                         "lr": 0.01, "epochs": 2}),
    "mlp_batch16_tabular_seed2": ("mlp_train.py", "tabular", {"activation": "relu", "batch-size": 16, "optimizer": "sgd",
                                                               "lr": 0.01, "epochs": 1, "seed": 2}),
    "mlp_batch512_tabular": ("mlp_train.py", "tabular", {"activation": "relu", "batch-size": 512, "optimizer": "adam",
                                                          "lr": 0.003, "epochs": 60}),
    "cnn_digits_global_mode": ("cnn_train.py", "digits", {"activation": "tanh", "norm": "none", "optimizer": "sgd",
                                                           "lr": 0.02, "epochs": 8}),
    # the random zoo's seed 1005, configuration 12, healthy twin: LossNotDecreasing stopped it at step 430
    "logline_tabular_sgd": ("tabular_logline.py", "zoo:1005:12", {}),
    # development seed 24's frozen updates (SGD at 5e-7, a 0.05 rate x1e-5): its loss never moves
    "smd_digits_frozen": ("digits_smd.py", "zoo:24:34:faulted", {}),
    # development seed 24's sigmoid stack (3x64, SGD 0.05): a slow start that meets the objective (0.925)
    "logline_digits_sigmoid": ("tabular_logline.py", "zoo:24:2:faulted", {}),
}
#: Recorded with each gradient tensor's mean |g| at the saved steps (the hook's default interval, 10).
RECORDED_WITH_GRADIENTS = {
    "cnn_images_converged": ("cnn_train.py", "images", {"activation": "gelu", "norm": "batch", "optimizer": "sgd",
                                                         "lr": 0.05, "step-lr": 3, "epochs": 6, "channels": 16}),
    "cnn_images_converged_seed6": ("cnn_train.py", "images", {"activation": "gelu", "norm": "batch", "optimizer": "sgd",
                                                               "lr": 0.05, "step-lr": 3, "epochs": 3, "channels": 16,
                                                               "seed": 6}),
}


def run_job(script: str, dataset: str, hyperparameters: dict, hook: dict, rules: list, work: Path, seed: int = SEED) -> Path:
    """One job of ``script`` through the launcher (data and model seed ``seed``); returns its debug output directory.
    ``dataset`` "zoo:SEED:INDEX": the random repair zoo's drawn configuration (bench/zoo_random.py), its healthy
    twin's data, script and hyperparameters (``seed`` is then its own); "zoo:SEED:INDEX:faulted":
    the configuration with its fault; ``hyperparameters`` then change its own (a shorter run, another rate)."""
    scripts, arguments = healthy_corpus.SCRIPTS, ["--seed", str(seed)]
    if dataset.startswith("zoo:"):
        _, zoo_seed, index, *which = dataset.split(":")
        healthy = which != ["faulted"]
        configuration = zoo_random.draw(int(zoo_seed), int(index) + 1)[int(index)]
        channels = zoo_random.write_channels(configuration, healthy, work / "data")
        style = zoo_random.STYLES[configuration.style]
        scripts, script, arguments = style.script.parent, style.entry_point, []
        hyperparameters = {**configuration.hyperparameters(healthy=healthy), **hyperparameters}
    else:
        channels = healthy_corpus.write_data(dataset, seed, work / "data")
    debug = work / "debug-output"
    arguments += ["--remediation_entry_point", script, "--remediation_debugger_hook_config", json.dumps(hook),
                  "--remediation_debugger_rule_configs", json.dumps(rules)]
    for name, value in hyperparameters.items():
        arguments += [f"--{name}", str(value)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DEBUG_OUTPUT_DIR": str(debug), "DEBUG_OUTPUT_S3_SYNC": "off",
           "OMP_NUM_THREADS": "1", "TRAINING_FAILURE_FILE": str(work / "failure"),
           **{f"SM_CHANNEL_{name.upper()}": str(directory) for name, directory in channels.items()}}
    launcher = f"from debugger.launcher import main; main({str(scripts)!r})"
    subprocess.run([sys.executable, "-c", launcher, *arguments], cwd=scripts, env=env, check=True)
    return debug


def make_saved_trial(work: Path) -> None:
    hook = {"HookParameters": {"train.save_interval": "10", "train.end_step": "20", "eval.end_step": "0"},
            "CollectionConfigurations": [{"CollectionName": "gradients"}, {"CollectionName": "weights"},
                                         {"CollectionName": "biases"}]}
    rules = [{"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}}]
    debug = run_job("mlp_train.py", "tabular", {"norm": "batch", "hidden": 8, "depth": 1, "epochs": 1}, hook, rules, work)
    target = HERE / "bias_before_batchnorm"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(debug, target, ignore=shutil.ignore_patterns("tensorboard*", "metrics.jsonl"))


def record(name: str, script: str, dataset: str, hyperparameters: dict, work: Path, gradients: bool = False) -> None:
    hyperparameters = dict(hyperparameters)
    seed = hyperparameters.pop("seed", SEED)
    path = work / f"{name}.jsonl"
    rules = [{"RuleConfigurationName": "LossRecorder",
              "RuleParameters": {"rule_to_invoke": "LossRecorder", "custom_rule_source": str(HERE / "loss_recorder.py"),
                                 "path": str(path), "gradients": "true" if gradients else "false"}}]
    if gradients:  # the gradients at the product's default save interval
        hook = {"HookParameters": {"save_interval": "10"}, "CollectionConfigurations": [{"CollectionName": "losses"},
                                                                                         {"CollectionName": "gradients"}]}
    else:
        hook = {"HookParameters": {"save_interval": "1000000"}, "CollectionConfigurations": [{"CollectionName": "losses"}]}
    run_job(script, dataset, hyperparameters, hook, rules, work / name, seed)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    compact = [[row["step"], row["mode"], row["mode_step"], float(f"{row['loss']:.6g}"), row["metrics"]] for row in lines]
    if gradients:
        for row, line in zip(compact, lines, strict=True):
            saved = {tensor: float(f"{value:.6g}") for tensor, value in line["gradients"].items()}
            if "total_gradient_norm" in line:  # the every-step signal, with the saved tensors of its step
                saved["total_gradient_norm"] = float(f"{line['total_gradient_norm']:.6g}")
            if saved:
                row.append(saved)
                row.append(line["silent"])
    with gzip.open(HERE / f"{name}.jsonl.gz", "wt", encoding="utf-8") as handle:
        for row in compact:
            handle.write(json.dumps(row, separators=(",", ":")) + "\n")


def main(names: list[str]) -> None:
    """Every file, or only the recorded trajectories named."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        if not names:
            make_saved_trial(work / "trial")
        for name, (script, dataset, hyperparameters) in RECORDED.items():
            if not names or name in names:
                record(name, script, dataset, hyperparameters, work)
        for name, (script, dataset, hyperparameters) in RECORDED_WITH_GRADIENTS.items():
            if not names or name in names:
                record(name, script, dataset, hyperparameters, work, gradients=True)


if __name__ == "__main__":
    main(sys.argv[1:])
