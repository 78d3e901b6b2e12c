"""The hook's report names what it saw by the optimizer step (debugger/hook/rule_runner.py, decision 205): real tiny
training that diverges where global steps and optimizer steps differ (gradient accumulation with an evaluation pass
between updates; LBFGS, whose closure is evaluated several times a step). Every window, peak and divergence in the
status document carries the optimizer step of its global step, counted here independently from the script's own
forward passes and updates, and the sentence the planner quotes names the optimizer steps."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from contracts.step_names import step_name, step_span
from debugger import Hook
from debugger.core.modes import ModeKeys
from debugger.hook.pytorch.step_capture import NATIVE, SMDEBUG


def _rules() -> list[dict]:
    # a rule that does not fire here: the run goes on diverging and the report is the job's whole course
    return [{"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}}]


class _Truth:
    """The script's own count: the optimizer step (updates before it) of every forward pass of the model that the hook
    numbers as a global step, and whether it was an evaluation pass. smdebug's profile numbers every forward pass; our
    own, a training forward pass (evaluation passes are no steps there)."""

    def __init__(self, model: nn.Module, every_forward: bool):
        self.updates = 0
        self.steps: list[tuple[int, bool]] = []

        def count(module: nn.Module, args) -> None:
            if every_forward or (module.training and torch.is_grad_enabled()):
                self.steps.append((self.updates, not module.training))

        model.register_forward_pre_hook(count)


def _accumulating(out_dir, seed: int, rate: float, profile: str, accumulation: int = 4, evaluate_every: int = 3) -> _Truth:
    """SGD at a rate far too high, ``accumulation`` micro-batches an update, an evaluation forward every
    ``evaluate_every`` updates."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    hook = Hook.from_configs(rule_configs=_rules(), out_dir=out_dir, job_name="accumulating", profile=profile)
    hook.register_module(model)
    criterion = nn.CrossEntropyLoss()
    hook.register_loss(criterion)
    truth = _Truth(model, every_forward=profile == SMDEBUG)
    optimizer = torch.optim.SGD(model.parameters(), lr=rate)
    generator = torch.Generator().manual_seed(seed + 1)
    for update in range(12):
        if update % evaluate_every == 0:
            hook.set_mode(ModeKeys.EVAL)
            model.eval()
            with torch.no_grad():
                criterion(model(torch.randn(32, 6, generator=generator)), torch.randint(0, 4, (32,), generator=generator))
            model.train()
        hook.set_mode(ModeKeys.TRAIN)
        optimizer.zero_grad()
        for _ in range(accumulation):
            inputs, labels = torch.randn(32, 6, generator=generator), torch.randint(0, 4, (32,), generator=generator)
            (criterion(model(inputs), labels) / accumulation).backward()
        optimizer.step()
        truth.updates += 1
    hook.close()
    return truth


def _lbfgs(out_dir, seed: int, rate: float, profile: str) -> _Truth:
    """LBFGS (up to 3 closure evaluations a step) at a rate far too high, with the zero-argument closure scripts
    write."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))
    hook = Hook.from_configs(rule_configs=_rules(), out_dir=out_dir, job_name="lbfgs", profile=profile)
    hook.register_module(model)
    criterion = nn.CrossEntropyLoss()
    hook.register_loss(criterion)
    truth = _Truth(model, every_forward=profile == SMDEBUG)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=rate, max_iter=3)
    generator = torch.Generator().manual_seed(seed + 1)
    hook.set_mode(ModeKeys.TRAIN)
    for _ in range(16):
        inputs, labels = torch.randn(32, 6, generator=generator), torch.randint(0, 4, (32,), generator=generator)

        def closure(inputs=inputs, labels=labels) -> torch.Tensor:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            return loss

        optimizer.step(closure)
        truth.updates += 1
    hook.close()
    return truth


def _evidence(out_dir):
    return RuleStatusDocument.from_json((out_dir / RULE_STATUS_FILE).read_text()).evidence


# each a seed and rate that diverges (the accumulating run's loss rises and stays; LBFGS's gradient norm spikes)
CASES = [
    pytest.param(_accumulating, 11, 30.0, NATIVE, id="accumulation"),
    pytest.param(_accumulating, 13, 30.0, SMDEBUG, id="accumulation-and-evaluation-passes-smdebug-profile"),
    pytest.param(_lbfgs, 12, 20.0, NATIVE, id="lbfgs-closures"),
]


@pytest.mark.parametrize(("train", "seed", "rate", "profile"), CASES)
def test_the_report_names_its_windows_peaks_and_divergence_by_optimizer_step(tmp_path, train, seed, rate, profile):
    truth = train(tmp_path, seed, rate, profile)
    evidence = _evidence(tmp_path)
    assert truth.steps[-1][0] < len(truth.steps) - 1  # the two numberings differ in this run
    # smdebug's profile numbers the evaluation passes among the global steps too
    assert any(evaluation for _, evaluation in truth.steps) == (profile == SMDEBUG and train is _accumulating)

    def optimizer_step(global_step: int) -> int:
        return truth.steps[global_step][0]

    for windows in (evidence.loss_windows, evidence.gradient_norm_windows):
        assert windows
        for window in windows:
            assert window.first_optimizer_step == optimizer_step(window.first_step)
            assert window.last_optimizer_step == optimizer_step(window.last_step)
            assert window.peak_optimizer_step == optimizer_step(window.peak_step)
    for peak in (evidence.loss_peak, evidence.gradient_norm_peak):
        assert (peak.optimizer_step, peak.evaluation_pass) == truth.steps[peak.step]
    found = evidence.loss_divergence or evidence.gradient_norm_divergence
    assert found is not None, "the run did not diverge: the case's rate or seed no longer makes it"
    assert found.from_optimizer_step == optimizer_step(found.from_step)
    assert found.peak_optimizer_step == optimizer_step(found.peak_step)
    if found.kind == "spiking":
        named = step_name(found.peak_step, found.peak_optimizer_step, with_global=True)
    else:
        named = step_span(found.from_step, found.peak_step, found.from_optimizer_step, found.peak_optimizer_step, True)
    assert named in found.describe() and "(saved as global step" in named
    said = [int(number) for number in re.findall(r"steps? (\d+)(?:-(\d+))?", found.describe().split(" (saved")[0])[0] if number]
    assert max(said) <= truth.updates  # no step beyond the updates the script made
