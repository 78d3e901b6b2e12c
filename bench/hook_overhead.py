"""Cost of the debugger hook on ResNet-20 training steps and on fast steps, and how fast a StopTraining rule ends a job.

    python bench/hook_overhead.py [--quick] [--skip-latency] [--skip-fast-steps] [--configurations no_hook,...]

1. Overhead: ResNet-20 (model.resnet.build_resnet, no batch norm), batch 128, random CIFAR-shaped data,
   CPU, 2 threads. Four configurations train side by side in this one process, in interleaved repetitions
   (one block of steps of each per repetition, the first repetition discarded as warm-up):
   no hook (twice: the second is an A/A control whose difference is the noise floor); the hook with default settings (save_interval 500, ExplodingTensor with StopTraining +
   VanishingGradient + LossNotDecreasing, every-step cheap checks); save_interval 10; save_interval 1; and
   save_interval 1 with dry_run (everything but writing the step files); and the zero-change hook (the script
   creates no hook: debugger.hook.zero_change.pytorch's global module and optimizer hooks and wrapped backward, installed
   only while its own runner trains, so the other runners never meet them) at the default save interval.
   Reports the median step time per configuration, its ratio to no hook (overall, and the median of the
   per-repetition ratios, which cancels slow drifts in machine load), and the hook's own time on the training
   thread per step: every hook entry point (forward pre-hook, module and loss hooks, the step's check) timed
   directly, in wall time and in the thread's CPU time, against the no-hook step. Saved steps are written by
   the hook's background thread; its cost shows in the step-time ratios, not in the hook's own time.
2. Fast steps (issue 47): the same measurement on models whose steps take milliseconds and that hold a few hundred
   parameter tensors: a residual MLP (302 tensors) and, when transformers is installed, a tiny GPT-2 built from
   its configuration (292 tensors, no download); no hook, its A/A control, the explicit and the zero-change hook at
   the default save interval, side by side. ``hook_thread_cpu_within_fast_step_bound`` holds each hook's own work
   per step against the bound: 1 ms or 5% of a 20 ms step, whichever is larger (summed up per model and hook in
   ``fast_step_overhead.hook_thread_cpu_within_fast_step_bound``). The machine's load average at the start and the
   end is reported beside: a loaded machine inflates even thread CPU times (its other work evicts the caches).
3. Detection latency: `python -m model.train` in a subprocess on a generated synthetic data set, no batch
   norm, warmup learning rate 0.1, ExplodingTensor with StopTraining. Reports the step of the first
   non-finite gradient (progress log), the rule's issue step (status document), the steps executed after
   it, and the seconds from the issue to process exit.

Prints one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The built-in example's entry point (examples/resnet) and the model package it imports (model/, at the top).
EXAMPLE = REPO / "examples" / "resnet"
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from contracts.job import HOOK_CONFIG_FILE_ENV, RULE_CONFIGS_FILE_ENV  # noqa: E402
from contracts.progress_log import parse_progress_line  # noqa: E402
from contracts.rule_status import RuleStatusDocument  # noqa: E402
from debugger import Hook  # noqa: E402
from debugger.hook.zero_change.pytorch import AutomaticHook, TorchWatcher  # noqa: E402

STOP = '[{"name":"StopTraining"}]'
DEFAULT_RULES = [
    {
        "RuleConfigurationName": "ExplodingTensor",
        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": STOP},
    },
    {"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}},
    {"RuleConfigurationName": "LossNotDecreasing", "RuleParameters": {"rule_to_invoke": "LossNotDecreasing"}},
]
CONFIGURATIONS = {
    "no_hook": None,
    # A second, identical runner without a hook: its "overhead" is the measurement's noise floor.
    "no_hook_control": None,
    "hook_default_save_interval_500": {},
    "hook_save_interval_10": {"HookParameters": {"save_interval": "10"}},
    "hook_save_interval_1": {"HookParameters": {"save_interval": "1"}},
    # the same without writing (dry_run): what the step files cost beside the hook's work on the training thread
    "hook_save_interval_1_dry_run": {"HookParameters": {"save_interval": "1", "dry_run": "true"}},
}
#: The zero-change hook: the plain loop creates no hook; the job's watcher attaches through PyTorch's global hooks.
ZERO_CHANGE_CONFIGURATIONS = {"zero_change_default_save_interval_500": {}}
#: The zero-change watcher's entry points on the training thread (module hooks, backward, optimizer hooks).
ZERO_CHANGE_ENTRIES = ("_forward_pre", "_forward_post", "_before_backward", "_after_backward", "_before_optimizer_step", "_after_optimizer_step")


class Workload:
    """A model to train in the benchmark: how to build it, its batches and its loss."""

    name = "resnet20"
    description = "ResNet-20 ELU, no batch norm"
    batch_size = 128

    def build(self) -> tuple[nn.Module, nn.Module | None]:
        """The model and its loss module (None: the model computes its loss itself)."""
        from model.resnet import build_resnet

        return build_resnet(depth=20, activation="elu", add_batch_norm=False, num_classes=10), nn.CrossEntropyLoss()

    def batches(self, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        generator = torch.Generator().manual_seed(0)
        return [
            (torch.randn(self.batch_size, 3, 32, 32, generator=generator), torch.randint(0, 10, (self.batch_size,), generator=generator))
            for _ in range(count)
        ]

    def loss(self, model: nn.Module, criterion: nn.Module | None, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return criterion(model(batch[0]), batch[1])


class ResidualMLP(Workload):
    """Fast steps, many parameter tensors: 75 residual blocks (LayerNorm, Linear 64x64, ReLU) and a head, 302 tensors."""

    name = "mlp_302_tensors"
    description = "residual MLP, 75 blocks of LayerNorm + Linear(64, 64), 302 parameter tensors"
    batch_size = 64

    def build(self) -> tuple[nn.Module, nn.Module | None]:
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.norm, self.linear = nn.LayerNorm(64), nn.Linear(64, 64)

            def forward(self, inputs):
                return inputs + torch.relu(self.linear(self.norm(inputs)))

        return nn.Sequential(*[Block() for _ in range(75)], nn.Linear(64, 10)), nn.CrossEntropyLoss()

    def batches(self, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        generator = torch.Generator().manual_seed(0)
        return [
            (torch.randn(self.batch_size, 64, generator=generator), torch.randint(0, 10, (self.batch_size,), generator=generator))
            for _ in range(count)
        ]


class TinyGPT2(Workload):
    """A tiny GPT-2 built from its configuration (transformers, no download): 24 layers of width 32, 292 tensors; the
    model computes its own loss (no loss module), as Hugging Face models do."""

    name = "gpt2_tiny_292_tensors"
    description = "GPT-2 from GPT2Config(n_layer=24, n_embd=32, n_head=2, vocab 256), 8 sequences of 32 tokens"
    batch_size = 8

    def build(self) -> tuple[nn.Module, nn.Module | None]:
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_layer=24, n_head=2, n_embd=32, vocab_size=256, n_positions=64, bos_token_id=0, eos_token_id=0)
        return GPT2LMHeadModel(config), None

    def batches(self, count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        generator = torch.Generator().manual_seed(0)
        return [(tokens, tokens) for tokens in (torch.randint(0, 256, (self.batch_size, 32), generator=generator) for _ in range(count))]

    def loss(self, model: nn.Module, criterion: nn.Module | None, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return model(input_ids=batch[0], labels=batch[1]).loss


def fast_step_workloads() -> list[Workload]:
    """The fast-step models: the MLP always, the tiny GPT-2 when transformers is installed (requirements-dev.txt)."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return [ResidualMLP()]
    return [ResidualMLP(), TinyGPT2()]


class Runner:
    """One configuration: its own model, optimizer and (maybe) hook."""

    def __init__(self, name: str, hook_config: dict | None, out_root: Path, zero_change: bool = False, workload: Workload | None = None):
        torch.manual_seed(0)
        self.name = name
        self.workload = workload or Workload()
        self.model, self.criterion = self.workload.build()
        # a small learning rate keeps the BN-free network finite for the whole benchmark
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=1e-4, momentum=0.9)
        self.parameter_tensors = sum(1 for _ in self.model.parameters())
        self.hook = None
        self.watcher = None
        self.hook_seconds: list[float] = []
        if zero_change:
            # nothing registered: the watcher finds the model, the loss and the optimizer as the loop runs them
            self.watcher = TorchWatcher(
                lambda: AutomaticHook.from_configs(hook_config, DEFAULT_RULES, out_dir=out_root / name, job_name=name)
            )
            for entry in ZERO_CHANGE_ENTRIES:
                setattr(self.watcher, entry, self._timed(getattr(self.watcher, entry)))
        elif hook_config is not None:
            self.hook = Hook.from_configs(hook_config, DEFAULT_RULES, out_dir=out_root / name, job_name=name)
            # Time every entry point the training thread runs through (torch calls the bound methods it was
            # given at registration, so they are wrapped before registering): the hook's own work per step.
            for entry in ("_on_forward_start", "_on_module_output", "_on_loss", "end_step"):
                setattr(self.hook, entry, self._timed(getattr(self.hook, entry)))
            self.hook.register_module(self.model)
            if self.criterion is not None:
                self.hook.register_loss(self.criterion)
            self.hook.register_optimizer(self.optimizer)
            self.hook.set_context(epoch=0, phase="main", steps_per_epoch=20, learning_rate=1e-4)
        self._step_hook_seconds = 0.0
        self._step_hook_cpu_seconds = 0.0
        self.hook_cpu_seconds: list[float] = []
        self.step_seconds: list[float] = []
        self.block_medians: list[float] = []

    def _timed(self, method):
        def timed(*args, **kwargs):
            started, started_cpu = time.perf_counter(), time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                self._step_hook_seconds += time.perf_counter() - started
                self._step_hook_cpu_seconds += time.thread_time() - started_cpu

        return timed

    def run(self, batches: list[tuple[torch.Tensor, torch.Tensor]], record: bool) -> None:  # noqa: D102
        if self.watcher is not None:
            self.watcher.install()  # the global hooks see every module: only while this runner trains
        try:
            self._run(batches, record)
        finally:
            if self.watcher is not None:
                self.watcher.uninstall()

    def _run(self, batches: list[tuple[torch.Tensor, torch.Tensor]], record: bool) -> None:
        for batch in batches:
            self._step_hook_seconds = self._step_hook_cpu_seconds = 0.0
            started = time.perf_counter()
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.workload.loss(self.model, self.criterion, batch)
            if self.hook is not None and self.criterion is None:
                self.hook.record_loss(loss)  # an explicit hook's script hands over a loss no module computes
            loss.backward()
            self.optimizer.step()
            elapsed = time.perf_counter() - started
            if record:
                self.step_seconds.append(elapsed)
                if self.hook is not None or self.watcher is not None:
                    self.hook_seconds.append(self._step_hook_seconds)
                    self.hook_cpu_seconds.append(self._step_hook_cpu_seconds)
        if record:
            self.block_medians.append(statistics.median(self.step_seconds[-len(batches) :]))


#: The issue-47 bound on the hook's own work per step on fast steps: 1 ms or 5% of a 20 ms step, whichever is larger.
FAST_STEP_BOUND_SECONDS = max(0.001, 0.05 * 0.020)
#: Fast-step models run the configurations a user meets: none, the explicit and the zero-change hook at the default.
FAST_STEP_CONFIGURATIONS = ("no_hook", "no_hook_control", "hook_default_save_interval_500", "zero_change_default_save_interval_500")


def measure_overhead(
    repetitions: int, steps_per_repetition: int, only: set[str] | None = None, workload: Workload | None = None
) -> dict:
    torch.set_num_threads(2)
    workload = workload or Workload()
    batches = workload.batches(steps_per_repetition)
    with tempfile.TemporaryDirectory() as scratch:
        chosen = {name: config for name, config in CONFIGURATIONS.items() if only is None or name in only or name == "no_hook"}
        runners = [Runner(name, config, Path(scratch), workload=workload) for name, config in chosen.items()]
        # after the explicit hooks exist: a hook created while a watcher is installed makes it stand aside
        runners += [
            Runner(name, config, Path(scratch), zero_change=True, workload=workload)
            for name, config in ZERO_CHANGE_CONFIGURATIONS.items()
            if only is None or name in only
        ]
        for repetition in range(repetitions + 1):
            order = runners if repetition % 2 == 0 else list(reversed(runners))
            for runner in order:
                runner.run(batches, record=repetition > 0)
        baseline = statistics.median(runners[0].step_seconds)
        results = {}
        for runner in runners:
            median = statistics.median(runner.step_seconds)
            paired = [
                block / base - 1.0 for block, base in zip(runner.block_medians, runners[0].block_medians, strict=True)
            ]
            entry = {
                "median_step_seconds": round(median, 4),
                "steps_measured": len(runner.step_seconds),
                "overhead_vs_no_hook": round(median / baseline - 1.0, 4),
                "paired_overhead_median": round(statistics.median(paired), 4),
            }
            hook = runner.hook if runner.watcher is None else runner.watcher.hook
            if runner is runners[0]:
                # the fastest step: the least disturbed by other work on the machine, nearest an idle step
                entry["fastest_step_seconds"] = round(min(runner.step_seconds), 4)
            if hook is not None:
                hook_median = statistics.median(runner.hook_seconds)
                entry["median_hook_seconds_per_step"] = round(hook_median, 5)
                entry["hook_share_of_no_hook_step"] = round(hook_median / baseline, 4)
                # the training thread's own CPU time in the hook: unlike wall time, not inflated by waiting for a
                # core on a busy machine (torch's intra-op helper threads are not counted)
                cpu_median = statistics.median(runner.hook_cpu_seconds)
                entry["median_hook_thread_cpu_seconds_per_step"] = round(cpu_median, 5)
                entry["hook_thread_cpu_within_fast_step_bound"] = cpu_median <= FAST_STEP_BOUND_SECONDS
                entry["hook_thread_cpu_share_of_no_hook_step"] = round(cpu_median / baseline, 4)
                entry["saved_steps"] = len(list((Path(scratch) / runner.name / "steps").glob("*.npz")))
                entry["steps_recorded_by_hook"] = hook.status_document().last_step + 1
                hook.close()
            if runner.watcher is not None:
                # What the hook's own time leaves out: every module call takes nn.Module's slow path while global
                # hooks exist. Measured apart, as the fastest of many repeats (robust to load), and added up.
                dispatch = measure_global_hook_dispatch(runners[0], Path(scratch))
                entry.update(dispatch)
                fastest = min(runners[0].step_seconds)
                cost = statistics.median(runner.hook_cpu_seconds) + dispatch["global_hook_dispatch_seconds_per_step"]
                entry["hook_cpu_and_dispatch_seconds_per_step"] = round(cost, 5)
                entry["hook_cpu_and_dispatch_share_of_fastest_no_hook_step"] = round(cost / fastest, 4)
            results[runner.name] = entry
    return {
        "model": workload.description,
        "parameter_tensors": runners[0].parameter_tensors,
        "batch_size": workload.batch_size,
        "threads": 2,
        "repetitions": repetitions,
        "steps_per_repetition": steps_per_repetition,
        "configurations": results,
    }


def measure_global_hook_dispatch(runner: Runner, scratch: Path, calls: int = 2000, repeats: int = 100) -> dict:
    """The zero-change watcher's cost per module call outside its own functions' timing: nn.Module's slow path with
    global hooks (and the watcher's hooks on a module it does not adopt), against the fast path; times the module
    calls of one training forward of the runner's model."""
    counted: list[int] = []
    handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda module, args: counted.append(1))
    with torch.no_grad():
        runner.workload.loss(runner.model, runner.criterion, runner.workload.batches(1)[0])
    handle.remove()
    probe, value = nn.Identity(), torch.zeros(1)

    def loop():
        for _ in range(calls):
            probe(value)

    plain = min(timeit.repeat(loop, number=1, repeat=repeats)) / calls
    watcher = TorchWatcher(lambda: AutomaticHook.from_configs({}, [], out_dir=scratch / "dispatch", job_name="dispatch"))
    watcher.install()
    try:
        hooked = min(timeit.repeat(loop, number=1, repeat=repeats)) / calls
    finally:
        watcher.uninstall()
    return {
        "module_calls_per_step": len(counted),
        "global_hook_extra_microseconds_per_module_call": round((hooked - plain) * 1e6, 3),
        "global_hook_dispatch_seconds_per_step": round((hooked - plain) * len(counted), 5),
    }


def measure_detection_latency(num_train_samples: int) -> dict:
    from model.data import write_synthetic_channels

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        channels = write_synthetic_channels(root / "data", train_samples=num_train_samples, test_samples=128, seed=0)
        debug_dir = root / "debug"
        hyperparameters = {
            "warmup_learning_rate": "0.1",
            "learning_rate": "0.1",
            "add_batch_norm": "false",
            "num_epochs": "2",
            "batch_size": "128",
        }
        # The files SageMaker (hook) and our launcher (rules) write into the container, as the job reads them.
        hook_file, rules_file = root / "debughookconfig.json", root / "debugrulesconfig.json"
        hook_file.write_text(json.dumps({"LocalPath": str(debug_dir), "HookParameters": {"save_interval": "500"}}))
        rules_file.write_text(json.dumps(DEFAULT_RULES[:1]))
        env = {
            **os.environ,
            "SM_HPS": json.dumps(hyperparameters),
            "SM_CHANNEL_TRAIN": str(channels["train"]),
            "SM_CHANNEL_TEST": str(channels["test"]),
            "SM_MODEL_DIR": str(root / "model"),
            "TRAINING_CHECKPOINT_DIR": str(root / "checkpoints"),
            "TRAINING_FAILURE_FILE": str(root / "failure"),
            "DEBUG_OUTPUT_DIR": str(debug_dir),
            HOOK_CONFIG_FILE_ENV: str(hook_file),
            RULE_CONFIGS_FILE_ENV: str(rules_file),
            "DEBUG_OUTPUT_S3_SYNC": "off",
            "TRAINING_JOB_NAME": "latency-probe",
            "PYTHONPATH": str(REPO),
        }
        started = time.time()
        process = subprocess.Popen(
            [sys.executable, "-m", "model.train"],
            cwd=EXAMPLE,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        first_nonfinite_step = None
        first_nonfinite_seen_at = None
        for line in process.stdout:
            parsed = parse_progress_line(line)
            if parsed and parsed["kind"] == "training_step" and first_nonfinite_step is None:
                norm = parsed.get("gradient_norm")
                if not isinstance(norm, float) or norm != norm or norm in (float("inf"), float("-inf")):
                    first_nonfinite_step, first_nonfinite_seen_at = parsed["step"], time.time()
        exit_code = process.wait()
        exited_at = time.time()
        document = RuleStatusDocument.from_json((debug_dir / "rule-status.json").read_text())
        issue = document.rules[0].issue
        issue_at = datetime.fromisoformat(document.actions[0].at).timestamp() if document.actions else None
        failure = (root / "failure").read_text() if (root / "failure").exists() else ""
        return {
            "exit_code": exit_code,
            "failure_text": failure[:160],
            "first_nonfinite_gradient_step_in_progress_log": first_nonfinite_step,
            "rule_issue_step": issue.step if issue else None,
            "last_step_executed_by_hook": document.last_step,
            "steps_from_first_nonfinite_to_stop": (document.last_step - first_nonfinite_step)
            if first_nonfinite_step is not None
            else None,
            "seconds_from_issue_to_exit": round(exited_at - issue_at, 3) if issue_at else None,
            "seconds_from_nonfinite_log_line_to_exit": round(exited_at - first_nonfinite_seen_at, 3)
            if first_nonfinite_seen_at
            else None,
            "job_seconds": round(exited_at - started, 2),
            "evidence": document.to_dict()["evidence"],
        }


def measure_torch_teardown() -> float:
    """Seconds a process that imported torch and ran one backward takes to exit after its last line: the floor
    under any "issue to exit" latency of a PyTorch job, whatever the debugger does."""
    code = (
        "import time, torch\n"
        "torch.nn.Conv2d(3, 16, 3)(torch.randn(128, 3, 32, 32)).sum().backward()\n"
        "print(time.time(), flush=True)\n"
    )
    process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return round(time.time() - float(process.stdout.strip()), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (2 repetitions of 3 steps)")
    parser.add_argument("--skip-latency", action="store_true", help="only the overhead measurement")
    parser.add_argument("--repetitions", type=int, default=8, help="measured repetitions (default 8)")
    parser.add_argument(
        "--skip-fast-steps", action="store_true", help="only the ResNet-20 (not the fast-step MLP and tiny GPT-2)"
    )
    names = [*CONFIGURATIONS, *ZERO_CHANGE_CONFIGURATIONS]
    parser.add_argument(
        "--configurations",
        help=f"comma-separated, of {', '.join(names)} (default: all; no_hook, the baseline, always runs)",
    )
    arguments = parser.parse_args()
    only = None
    if arguments.configurations:
        only = {name.strip() for name in arguments.configurations.split(",") if name.strip()}
        unknown = sorted(only - set(names))
        if unknown:
            parser.error(f"--configurations: unknown {', '.join(unknown)}; choose from {', '.join(names)}")
    repetitions, steps = (2, 3) if arguments.quick else (arguments.repetitions, 6)
    # what else ran on the machine: thread CPU times are robust to waiting for a core, less to sharing its caches
    report = {"load_average_1_5_15_at_start": [round(value, 2) for value in os.getloadavg()]}
    report["overhead"] = measure_overhead(repetitions, steps, only)
    if not arguments.skip_fast_steps:
        # fast steps: the hook's own work must stay within FAST_STEP_BOUND_SECONDS; more steps per block (each is short)
        report["fast_step_overhead"] = {
            "bound_seconds_per_step": FAST_STEP_BOUND_SECONDS,
            **{
                workload.name: measure_overhead(repetitions, steps * 5, set(FAST_STEP_CONFIGURATIONS), workload)
                for workload in fast_step_workloads()
            },
        }
        fast = report["fast_step_overhead"]
        # the verdict in one place: each fast-step model, each hook kind, its own work per step within the bound
        fast["hook_thread_cpu_within_fast_step_bound"] = {
            name: {
                configuration: entry["hook_thread_cpu_within_fast_step_bound"]
                for configuration, entry in fast[name]["configurations"].items()
                if "hook_thread_cpu_within_fast_step_bound" in entry
            }
            for name in fast
            if isinstance(fast[name], dict) and "configurations" in fast[name]
        }
    if not arguments.skip_latency:
        report["detection_latency"] = measure_detection_latency(640 if arguments.quick else 2560)
        report["detection_latency"]["bare_torch_process_exit_seconds"] = measure_torch_teardown()
    report["load_average_1_5_15_at_end"] = [round(value, 2) for value in os.getloadavg()]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
