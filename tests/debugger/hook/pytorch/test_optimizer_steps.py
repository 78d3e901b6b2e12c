"""Messages name the optimizer step (debugger/hook/pytorch/optimizer_steps.py): real tiny training, a script that
evaluates between training steps and one that steps LBFGS with a closure, under both hook kinds. The saved data keeps
smdebug's global numbering; the failure text, the rule's message and the status document's issue name the script's
own step."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from contracts.job import CHECKPOINT_CONFIG_FILE_ENV, STOP_TRAINING_FAILURE
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from contracts.step_names import read_step_name
from debugger import Hook, StopTrainingRequested
from debugger.core.modes import ModeKeys
from debugger.hook.pytorch import optimizer_steps
from debugger.hook.zero_change.pytorch import AutomaticHook, TorchWatcher

STOP = json.dumps([{"name": "StopTraining"}])
HOOK_CONFIG = {"HookParameters": {"save_interval": "1"}}
#: The script's own step whose loss is made infinite.
BLOWN_STEP = 7


def _rules(name: str = "ExplodingTensor", **parameters: str) -> list[dict]:
    return [{"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, "action_json": STOP, **parameters}}]


def _train(model: nn.Module, optimizer: torch.optim.Optimizer, closure_steps: bool, evaluate_every: int, seed: int) -> None:
    """20 steps; an evaluation forward (eval mode, no gradients) before every ``evaluate_every``-th; step BLOWN_STEP's
    loss infinite."""
    generator = torch.Generator().manual_seed(seed)
    for step in range(20):
        inputs, labels = torch.randn(32, 6, generator=generator), torch.randint(0, 4, (32,), generator=generator)
        if evaluate_every and step % evaluate_every == 0:
            model.eval()
            with torch.no_grad():
                model(inputs)
            model.train()

        def closure(inputs=inputs, labels=labels, scale=math.inf if step == BLOWN_STEP else 1.0) -> torch.Tensor:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), labels) * scale
            loss.backward()
            return loss

        if closure_steps:
            optimizer.step(closure)
        else:
            closure()
            optimizer.step()


def _run(tmp_path: Path, zero_change: bool, lbfgs: bool, evaluate_every: int = 3, seed: int = 11) -> tuple[StopTrainingRequested, Path]:
    torch.manual_seed(seed)
    out_dir = tmp_path / "out"
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=4) if lbfgs else torch.optim.SGD(model.parameters(), lr=0.1)
    watcher = hook = None
    if zero_change:
        watcher = TorchWatcher(lambda: AutomaticHook.from_configs(HOOK_CONFIG, _rules(), out_dir=out_dir, job_name="job"))
        watcher.install()
    else:
        hook = Hook.from_configs(HOOK_CONFIG, _rules(), out_dir=out_dir, job_name="job")
        hook.register_module(model)
    try:
        with pytest.raises(StopTrainingRequested) as stopped:
            _train(model, optimizer, closure_steps=lbfgs, evaluate_every=evaluate_every, seed=seed)
    finally:
        if watcher is not None:
            watcher.uninstall()
            hook = watcher.hook
        hook.close()
    return stopped.value, out_dir


@pytest.mark.parametrize("zero_change", [True, False], ids=["zero_change", "explicit_hook"])
@pytest.mark.parametrize("lbfgs", [False, True], ids=["sgd_with_evaluation_passes", "lbfgs_closure"])
def test_the_stop_names_the_scripts_optimizer_step_and_the_saved_global_step(tmp_path, zero_change, lbfgs):
    stop, out_dir = _run(tmp_path, zero_change, lbfgs)
    document = RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_text())
    issue = document.rules[0].issue
    assert (issue.optimizer_step, issue.evaluation_pass) == (BLOWN_STEP, False)
    assert issue.step == stop.step  # the global step, as the saved data numbers it
    assert f"at step {BLOWN_STEP}" in issue.message and f"step {stop.step}" not in issue.message.replace(f"step {BLOWN_STEP}", "")
    said = f"step {BLOWN_STEP}" + (f" (saved as global step {stop.step})" if stop.step != BLOWN_STEP else "")
    assert str(stop).startswith(f"StopTraining: rule ExplodingTensor found an issue at {said}: ")
    # the monitor reads the failure text back to the same steps
    assert read_step_name(STOP_TRAINING_FAILURE.search(str(stop))) == (
        stop.step, BLOWN_STEP if stop.step != BLOWN_STEP else None, False
    )


def test_the_global_steps_stay_smdebugs_where_the_optimizer_steps_differ(tmp_path):
    """Zero change with evaluation passes: they are saved as EVAL steps among the global steps (smdebug's numbering);
    LBFGS with an explicit hook: each closure evaluation is a global step."""
    stop, _ = _run(tmp_path / "eval", zero_change=True, lbfgs=False)
    assert stop.step == BLOWN_STEP + 2  # evaluation passes before steps 3 and 6 (the first, before any training, unseen)
    stop, _ = _run(tmp_path / "lbfgs", zero_change=False, lbfgs=True)
    assert stop.step > 2 * BLOWN_STEP  # several closure evaluations per optimizer step


def test_an_issue_at_an_evaluation_pass_is_named_as_such(tmp_path):
    """A rule firing on an evaluation step (zero change: its loss a loss module's output) names it as the evaluation
    pass after the last optimizer step, never as a training step."""
    torch.manual_seed(5)
    out_dir = tmp_path / "out"
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(3)
    watcher = TorchWatcher(lambda: AutomaticHook.from_configs(HOOK_CONFIG, _rules(), out_dir=out_dir, job_name="job"))
    watcher.install()
    try:
        with pytest.raises(StopTrainingRequested) as stopped:
            for step in range(10):
                inputs, labels = torch.randn(16, 6, generator=generator), torch.randint(0, 3, (16,), generator=generator)
                optimizer.zero_grad()
                criterion(model(inputs), labels).backward()
                optimizer.step()
                if step == 4:  # a held-out batch holding a NaN: the evaluation loss is not finite
                    model.eval()
                    with torch.no_grad():
                        criterion(model(inputs * math.nan), labels)
                    model.train()
    finally:
        watcher.uninstall()
        watcher.hook.close()
    stop = stopped.value
    document = RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_text())
    issue = document.rules[0].issue
    assert watcher.hook.trial.mode(issue.step) is ModeKeys.EVAL
    assert (issue.optimizer_step, issue.evaluation_pass) == (5, True)
    assert "the evaluation pass after step 4" in issue.message
    assert str(stop).startswith(
        f"StopTraining: rule ExplodingTensor found an issue at the evaluation pass after step 4 (saved as global step {issue.step}): "
    )


def test_a_script_stepping_no_optimizer_is_named_by_its_training_steps(tmp_path):
    """Parameters updated by the script itself (no torch.optim step), a hook in smdebug's profile whose evaluation
    forwards (set_mode(EVAL)) are global steps: the training steps count."""
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    hook = Hook.from_configs(HOOK_CONFIG, _rules(), out_dir=tmp_path / "out", job_name="job", profile="smdebug")
    hook.register_module(model)
    generator = torch.Generator().manual_seed(4)
    try:
        with pytest.raises(StopTrainingRequested) as stopped:
            for step in range(10):
                inputs, labels = torch.randn(16, 6, generator=generator), torch.randint(0, 3, (16,), generator=generator)
                if step % 2 == 0:
                    hook.set_mode(ModeKeys.EVAL)
                    with torch.no_grad():
                        model(inputs)
                hook.set_mode(ModeKeys.TRAIN)
                loss = nn.functional.cross_entropy(model(inputs), labels) * (math.inf if step == 6 else 1.0)
                model.zero_grad()
                loss.backward()
                with torch.no_grad():
                    for parameter in model.parameters():
                        parameter -= 0.05 * parameter.grad
    finally:
        hook.close()
    assert stopped.value.step == 6 + 4  # the evaluation forwards before steps 0, 2, 4 and 6 are global steps
    assert str(stopped.value).startswith("StopTraining: rule ExplodingTensor found an issue at step 6 (saved as global step 10): ")


def test_a_script_that_numbers_its_steps_itself_is_named_by_its_own_count(tmp_path):
    """A job going on from a checkpoint another job wrote (the workflow's resume remedy) numbers its next step itself
    (``hook.step = 40``, as model/train.py does): its step 42 is "step 42", as its own log says, not the third step
    the hook saw."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    hook = Hook.from_configs(HOOK_CONFIG, _rules(), out_dir=tmp_path / "out", job_name="job")
    hook.register_module(model)
    hook.step = 40
    generator = torch.Generator().manual_seed(4)
    try:
        with pytest.raises(StopTrainingRequested) as stopped:
            for step in range(40, 46):
                inputs, labels = torch.randn(16, 6, generator=generator), torch.randint(0, 3, (16,), generator=generator)
                optimizer.zero_grad()
                (nn.functional.cross_entropy(model(inputs), labels) * (math.inf if step == 42 else 1.0)).backward()
                optimizer.step()
    finally:
        hook.close()
    issue = RuleStatusDocument.from_json((tmp_path / "out" / RULE_STATUS_FILE).read_text()).rules[0].issue
    assert (stopped.value.step, issue.optimizer_step) == (42, 42)
    assert str(stopped.value).startswith("StopTraining: rule ExplodingTensor found an issue at step 42: ")


class _NoParameters:
    """A hook that has registered no parameters yet."""


def test_the_record_of_optimizer_steps_keeps_the_latest_steps_only(monkeypatch):
    """A long job's record stays bounded; an older step is named by its global step."""
    monkeypatch.setattr(optimizer_steps, "KEPT_STEPS", 3)
    hook = _NoParameters()  # no watched parameters: whatever optimizer steps counts
    numbering = optimizer_steps.OptimizerSteps(hook)
    try:
        for step in range(5):
            numbering.begin(step, ModeKeys.TRAIN)
        assert sorted(numbering._steps) == [2, 3, 4]
        assert numbering.name(1) == "step 1" and numbering.name(4) == "step 4"
    finally:
        for handle in numbering.handles:
            handle.remove()


# --------------------------------------------------------------------------- spot restarts

SPOT_JOB = Path(__file__).parent / "spot_optimizer_job.py"
REPO = Path(__file__).resolve().parents[4]
#: spot_optimizer_job.py: the instance is reclaimed after optimizer step 5 (its checkpoint after step 3 kept), and
#: the restarted run's loss is infinite at optimizer step 9.
DIE_AFTER, BLOW_AT = 5, 9
HOOK_WAYS = ["native", "smd-code", "smd-json", "smd-get-hook", "zero-change"]


def _spot_job(tmp_path: Path, how: str, optimizer: str, die_after: int) -> subprocess.CompletedProcess:
    checkpoints = tmp_path / "checkpoints"
    config = tmp_path / "checkpointconfig.json"
    config.write_text(json.dumps({"LocalPath": str(checkpoints), "S3Uri": "s3://bucket/checkpoints/job/"}))
    env = {
        **os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "TRAINING_JOB_NAME": "spot-job-1",
        "TRAINING_CHECKPOINT_DIR": str(checkpoints), CHECKPOINT_CONFIG_FILE_ENV: str(config),
    }  # fmt: skip
    return subprocess.run(
        [sys.executable, str(SPOT_JOB), str(tmp_path / "debug"), how, optimizer, str(die_after), str(BLOW_AT)],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip


@pytest.mark.training
@pytest.mark.parametrize(
    ("how", "optimizer"), [*((how, "lbfgs") for how in HOOK_WAYS), ("native", "sgd"), ("zero-change", "sgd")]
)
def test_a_restarted_job_names_its_steps_by_the_optimizer_steps_its_checkpoint_followed(tmp_path, how, optimizer):
    """Every way a script makes its hook: the spot-resume state keeps the optimizer count beside smdebug's global
    steps, so the restarted run's first non-finite step is named by the optimizer steps, counted on from the
    checkpoint (with a hook the script makes, an LBFGS step is 3 closure evaluations, 3 global steps; smdebug's profile
    and the zero-change hook also count each epoch's evaluation forward as one). SGD's steps are named as before."""
    interrupted = _spot_job(tmp_path, how, optimizer, DIE_AFTER)
    assert interrupted.returncode == 137, interrupted.stderr[-3000:]
    restarted = _spot_job(tmp_path, how, optimizer, -1)
    assert "resuming from checkpoint-0000.pt at epoch 1" in restarted.stdout, restarted.stderr[-3000:]
    assert "StopTrainingRequested" in restarted.stderr

    states = json.loads((tmp_path / "checkpoints" / "metadata.json").read_text())
    # smdebug's four keys stay as smdebug writes them; the counts ride beside them
    (state,) = [state for state in states if state["training-run"] == 0]
    assert {"training-run", "latest-global-step-saved", "latest-global-step-seen", "latest-mode-step"} <= set(state)
    assert state["step-counts"]["optimizer-updates"] == 4  # the checkpoint after optimizer steps 0-3
    per_step = 3 if optimizer == "lbfgs" and how != "zero-change" else 1  # the zero-change hook: a step a backward
    evaluations = 0 if how == "native" else 1  # the epoch's evaluation forward: a global step but in our profile
    assert state["latest-global-step-seen"] == 4 * per_step + evaluations - 1

    issue = RuleStatusDocument.from_json((tmp_path / "debug" / RULE_STATUS_FILE).read_text()).rules[0].issue
    assert issue.step == BLOW_AT * per_step + 2 * evaluations  # the global step, as the saved data numbers it
    assert (issue.optimizer_step, issue.evaluation_pass) == (BLOW_AT, False)
    assert f"at step {BLOW_AT}" in issue.message


def _epochs(out_dir: Path, lbfgs: bool, accumulation: int, batches: int = 24, epochs: int = 2, seed: int = 31) -> RuleStatusDocument:
    """``epochs`` epochs over a loader of ``batches`` batches, telling the hook ``steps_per_epoch=len(loader)`` and
    each epoch's number: SGD stepping every ``accumulation`` batches, or LBFGS (closures) every batch."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=3) if lbfgs else torch.optim.SGD(model.parameters(), lr=0.05)
    hook = Hook.from_configs(HOOK_CONFIG, _rules("VanishingGradient"), out_dir=out_dir, job_name="job")
    hook.register_module(model)
    generator = torch.Generator().manual_seed(seed)
    loader = [(torch.randn(16, 6, generator=generator), torch.randint(0, 4, (16,), generator=generator)) for _ in range(batches)]
    hook.set_context(steps_per_epoch=len(loader))
    for epoch in range(epochs):
        hook.set_context(epoch=epoch)
        for batch, (inputs, labels) in enumerate(loader):

            def closure(inputs=inputs, labels=labels) -> torch.Tensor:
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(model(inputs), labels)
                loss.backward()
                return loss

            if lbfgs:
                optimizer.step(closure)
                continue
            (nn.functional.cross_entropy(model(inputs), labels) / accumulation).backward()
            if (batch + 1) % accumulation == 0:
                optimizer.step()
                optimizer.zero_grad()
    hook.close()
    return RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_text())


def test_a_completed_epoch_shows_the_unit_of_the_steps_per_epoch_the_script_gave(tmp_path):
    """Decision 206: the batches and optimizer steps of the epoch the script said ended decide the unit of its
    steps_per_epoch: 24 batches in 6 optimizer steps (accumulation 4) read as 6; 24 batches in 8 (accumulation 3,
    a ratio the job does not develop on) as 8; LBFGS's closure evaluations (3 a step) are one batch each step, so its
    24 stays 24; so does a loop without accumulation."""
    for name, lbfgs, accumulation, expected, unit in (
        ("accumulation-4", False, 4, 6, "batches"),
        ("accumulation-3", False, 3, 8, "batches"),
        ("lbfgs", True, 1, 24, "optimizer steps"),
        ("plain", False, 1, 24, "optimizer steps"),
    ):
        evidence = _epochs(tmp_path / name, lbfgs, accumulation).evidence
        assert (evidence.steps_per_epoch, evidence.steps_per_epoch_stated, evidence.steps_per_epoch_unit) == (
            expected, 24, unit
        ), name
        if unit == "batches":
            assert evidence.steps_per_epoch_reading == f"a completed epoch trained 24 batches in {expected} optimizer steps"
            assert evidence.batches_per_step == accumulation
