"""What the hook finds cannot carry a training signal, from the model it watches (debugger.hook.pytorch.model_structure): a bias
a normalization removes, frozen parameters; recorded on the live trial and beside the steps, and skipped by the
rules that judge gradients and parameters, which say so."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from contracts.rule_status import NO_ISSUES_FOUND
from debugger import Hook
from debugger.storage.layout import SILENT_TENSORS_FILE
from debugger.trial import create_trial


def vanishing_rule() -> list[dict]:
    return [{"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}}]


def train(model: nn.Module, tmp_path, inputs: torch.Tensor, steps: int = 2, profile: str = "native"):
    """A few real SGD steps of ``model`` under the hook (save interval 1); the hook and its closing document."""
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, rule_configs=vanishing_rule(),
                             out_dir=tmp_path, job_name="structure", profile=profile)
    hook.register_module(model)
    criterion = nn.CrossEntropyLoss()
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    labels = torch.randint(0, 3, (inputs.shape[0],), generator=torch.Generator().manual_seed(1))
    for _ in range(steps):
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        optimizer.step()
    return hook, hook.close()


class Functional(nn.Module):
    """``bn(conv(x))`` written in forward(), not as a Sequential; and a Linear whose output passes an activation
    before its normalization."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 8 * 8, 6)
        self.norm = nn.BatchNorm1d(6)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        return self.head(self.norm(F.relu(self.fc(x.flatten(1)))))


def silent_parameters(hook) -> set[str]:
    return {name for name in hook.trial.silent_tensors if not name.startswith("gradient/")}


def test_biases_a_normalization_removes_are_found_and_others_are_not(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(),  # removed: BatchNorm subtracts each feature's batch mean
        nn.Linear(6, 6), nn.LayerNorm(6), nn.ReLU(),  # kept: LayerNorm over the features removes only their mean
        nn.Linear(6, 3),
    )
    hook, document = train(model, tmp_path / "mlp", torch.randn(16, 5))
    assert silent_parameters(hook) == {"0.bias"}
    reason = hook.trial.silent_tensors["gradient/0.bias"]
    assert "BatchNorm1d" in reason and "zero by construction" in reason
    # the gradient really is a rounding error, the LayerNorm-fed one is not
    assert model[0].bias.grad.abs().mean() < 1e-7 < model[3].bias.grad.abs().mean()

    torch.manual_seed(0)
    convolutions = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.GroupNorm(4, 4), nn.ReLU(),  # one channel per group: removed
        nn.Conv2d(4, 4, 3), nn.GroupNorm(2, 4), nn.ReLU(),  # two channels per group: only their mean
        nn.Conv2d(4, 4, 3), nn.InstanceNorm2d(4, affine=True), nn.Flatten(), nn.Linear(4 * 2 * 2, 3),
    )
    hook, _ = train(convolutions, tmp_path / "cnn", torch.randn(8, 3, 8, 8))
    assert silent_parameters(hook) == {"0.bias", "6.bias"}

    hook, _ = train(Functional(), tmp_path / "functional", torch.randn(8, 3, 8, 8), profile="smdebug")
    assert silent_parameters(hook) == {"Functional_conv.bias"}  # fc's output passes a ReLU before its batch norm


def test_frozen_parameters_are_recorded_and_a_rule_says_which_it_skipped(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))
    for parameter in model[0].parameters():
        parameter.requires_grad = False
    hook, document = train(model, tmp_path, torch.randn(16, 5))
    assert silent_parameters(hook) == {"0.weight", "0.bias"}
    assert "frozen" in hook.trial.silent_tensors["0.weight"]
    # a frozen layer's bias is frozen, whatever follows it: it is not a trainable bias the trace looks at
    assert "frozen" in hook.trial.silent_tensors["0.bias"]
    (status,) = document.rules
    assert status.RuleEvaluationStatus == NO_ISSUES_FOUND


def test_a_rule_skips_the_silent_tensors_says_so_and_a_saved_trial_keeps_them(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))
    _, document = train(model, tmp_path, torch.randn(16, 5))
    (status,) = document.rules
    assert status.RuleEvaluationStatus == NO_ISSUES_FOUND
    assert status.StatusDetails.startswith("skipped 1 tensor(s) that cannot show this issue: gradient/0.bias (")
    saved = json.loads((tmp_path / SILENT_TENSORS_FILE).read_text())["tensors"]
    assert set(saved) == {"0.bias", "gradient/0.bias"}
    trial = create_trial(tmp_path)
    assert trial.tensor("gradient/0.bias").value(0).size == 6  # still saved: skipped by the rules, not hidden


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_parameter_frozen_after_registration_is_skipped_from_then_on(tmp_path, when):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, rule_configs=vanishing_rule(),
                             out_dir=tmp_path, job_name="freeze")
    if when == "before":
        model[0].weight.requires_grad = False
    hook.register_module(model)
    model[0].weight.requires_grad = False  # a fine-tuning schedule freezing a layer during training
    criterion = nn.CrossEntropyLoss()
    hook.register_loss(criterion)
    inputs, labels = torch.randn(8, 5), torch.randint(0, 3, (8,))
    criterion(model(inputs), labels).backward()
    hook.close()
    assert "frozen" in hook.trial.silent_tensors["0.weight"]
