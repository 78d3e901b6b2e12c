"""The tensor and activation rules in small real torch jobs through the hook: the rule-status document says
what fired, where, with the numbers; StopTraining stops the job at the step."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from contracts.rule_status import NAN_INPUT, RULE_STATUS_FILE, RuleStatusDocument
from debugger import Hook, StopTrainingRequested, create_trial

STOP = '[{"name":"StopTraining"}]'

pytestmark = pytest.mark.training

def rule_config(name: str, **parameters: str) -> dict:
    return {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **parameters}}


def read_status(directory: Path) -> RuleStatusDocument:
    return RuleStatusDocument.from_json((directory / RULE_STATUS_FILE).read_text())


class Block(nn.Module):
    def __init__(self, inputs: int, outputs: int, activation: type[nn.Module]):
        super().__init__()
        self.linear = nn.Linear(inputs, outputs)
        setattr(self, activation.__name__.lower(), activation())  # named "relu" / "tanh", as models usually are
        self.activation_name = activation.__name__.lower()

    def forward(self, inputs):
        return getattr(self, self.activation_name)(self.linear(inputs))


class MLP(nn.Module):
    def __init__(self, activation: type[nn.Module]):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.Sequential(Block(8, 32, activation), Block(32, 32, activation))
        self.head = nn.Linear(32, 3)

    def forward(self, inputs):
        return self.head(self.layers(inputs))


def train(hook: Hook, model: nn.Module, steps: int, data=None, lr: float = 0.01) -> int:
    """Train ``steps`` SGD steps on random data through ``hook``; the number of optimizer steps taken."""
    criterion = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(1)
    taken = 0
    for step in range(steps):
        inputs = data(step) if data else torch.randn(64, 8, generator=generator)
        optimizer.zero_grad()
        criterion(model(inputs), torch.randint(0, 3, (inputs.shape[0],), generator=generator)).backward()
        optimizer.step()
        taken += 1
    return taken


def test_job_with_mostly_dead_relus_stops_on_dead_relu(tmp_path):
    model = MLP(nn.ReLU)
    with torch.no_grad():
        model.layers[0].linear.bias[:24] = -100.0  # 24 of 32 units of the first layer can never be > 0
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "5"}},
        rule_configs=[rule_config("DeadRelu", action_json=STOP)],
        out_dir=tmp_path,
        job_name="dead-relu",
    )
    with pytest.raises(StopTrainingRequested) as raised:
        train(hook, model, 10)
    assert raised.value.rule_name == "DeadRelu" and raised.value.step == 0
    issue = read_status(tmp_path).rules[0].issue
    assert read_status(tmp_path).rules[0].RuleEvaluationStatus == "IssuesFound"
    assert issue.tensor == "layers.0.relu_output_0" and issue.value == pytest.approx(75.0) and issue.step == 0
    hook.close()
    assert "layers.0.relu_output_0" in create_trial(tmp_path).tensor_names(collection="activations")


def test_dead_relu_watches_an_anonymous_sequential_relu(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
    with torch.no_grad():
        model[0].bias[:20] = -100.0
    hook = Hook.from_configs(rule_configs=[rule_config("DeadRelu")], out_dir=tmp_path, job_name="anonymous")
    train(hook, model, 2)
    issue = hook.close().rules[0].issue
    assert issue.tensor == "1_output_0" and issue.value == pytest.approx(62.5) and issue.step == 0


def test_healthy_relu_job_ends_with_no_issues_found(tmp_path):
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "2"}},
        rule_configs=[rule_config("DeadRelu", action_json=STOP)],
        out_dir=tmp_path,
        job_name="live-relu",
    )
    assert train(hook, MLP(nn.ReLU), 6) == 6
    assert hook.close().rules[0].RuleEvaluationStatus == "NoIssuesFound"


def test_tanh_job_with_huge_init_reports_saturated_activation(tmp_path):
    model = MLP(nn.Tanh)
    with torch.no_grad():
        for block in model.layers:
            block.linear.weight.mul_(10_000.0)  # pre-activations in the thousands
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "3"}},
        rule_configs=[rule_config("SaturatedActivation")],
        out_dir=tmp_path,
        job_name="saturated",
    )
    train(hook, model, 4)
    document = hook.close()
    status = document.rules[0]
    assert status.RuleEvaluationStatus == "IssuesFound" and status.issue.step == 0
    assert status.issue.tensor in ("layers.0.tanh_input_0", "layers.1.tanh_input_0") and status.issue.value > 50.0


def test_job_checks_the_model_input_at_every_step_whatever_the_save_interval(tmp_path):
    generator = torch.Generator().manual_seed(2)
    nan_step = 3

    def data(step: int) -> torch.Tensor:
        batch = torch.randn(16, 8, generator=generator)
        if step == nan_step:
            batch[5, 2] = math.nan
        return batch

    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "500"}},
        rule_configs=[
            rule_config("CheckInputImages", action_json=STOP),
            rule_config("Unnormalized", rule_to_invoke="CheckInputImages", threshold_samples="32", threshold_mean="0.0"),
        ],
        out_dir=tmp_path,
        job_name="inputs",
    )
    with pytest.raises(StopTrainingRequested) as raised:
        train(hook, MLP(nn.ReLU), 6, data=data)
    assert raised.value.step == nan_step and raised.value.rule_name == "CheckInputImages"
    document = read_status(tmp_path)
    nan_issue, mean_issue = document.rules[0].issue, document.rules[1].issue
    assert nan_issue.kind == NAN_INPUT and nan_issue.tensor == "MLP_input_0" and nan_issue.value == 1
    # the second configuration judged the means once 32 samples were seen: step 1 (16 per step)
    assert mean_issue.step == 1 and mean_issue.kind is None and mean_issue.value != 0.0
    hook.close()
    assert create_trial(tmp_path).steps() == [0, nan_step]  # only step 0 and the non-finite step were saved


def test_job_with_frozen_zeroed_and_exploding_weights(tmp_path):
    model = MLP(nn.ReLU)
    with torch.no_grad():
        model.head.weight.zero_()
        model.layers[1].linear.weight.mul_(1000.0)
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "2"}},
        rule_configs=[
            rule_config("AllZero", tensor_regex="^head\\.weight$"),
            rule_config("UnchangedTensor", collection_names="weights"),
            rule_config("TensorVariance", collection_names="weights", max_threshold="10"),
        ],
        out_dir=tmp_path,
        job_name="weights",
    )
    train(hook, model, 6, lr=0.0)  # lr 0: nothing changes
    statuses = {status.RuleConfigurationName: status for status in hook.close().rules}
    assert statuses["AllZero"].issue.tensor == "head.weight" and statuses["AllZero"].issue.value == 100.0
    assert statuses["UnchangedTensor"].issue.step == 4  # saved steps 0, 2, 4
    variance = statuses["TensorVariance"].issue
    assert variance.tensor == "layers.1.linear.weight" and variance.kind == "above_max" and variance.value > 10
