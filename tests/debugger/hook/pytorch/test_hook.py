"""The hook on small real torch models: every-step detection, StopTraining before the optimizer step, saving, statuses."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from torch import nn

from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from debugger import Hook, StopTrainingRequested, create_trial
from debugger.core.collection import LEARNING_RATE
from debugger.rules import ExplodingTensor, VanishingGradient

STOP = '[{"name":"StopTraining"}]'


def rule(name: str, **parameters: str) -> dict:
    return {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **parameters}}


def small_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ELU(), nn.Linear(16, 4))


def batches(count: int):
    generator = torch.Generator().manual_seed(1)
    for _ in range(count):
        yield torch.randn(32, 6, generator=generator), torch.randint(0, 4, (32,), generator=generator)


def watched_model(hook: Hook, lr: float = 0.01):
    """A small model, its loss registered with ``hook``, and a plain SGD optimizer (not registered)."""
    model, criterion = small_model(), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    return model, criterion, torch.optim.SGD(model.parameters(), lr=lr)


def run_steps(model: nn.Module, criterion: nn.Module, optimizer: torch.optim.Optimizer, count: int) -> int:
    """``count`` ordinary training steps; returns how many ran."""
    steps_run = 0
    for inputs, labels in batches(count):
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        optimizer.step()
        steps_run += 1
    return steps_run


def poison_gradient_at(model: nn.Module, step_of, bad_step: int):
    """Make the first layer's weight gradient NaN at ``bad_step`` (a tensor hook: the real gradient path)."""

    def poison(gradient):
        return gradient * math.nan if step_of() == bad_step else gradient

    model[0].weight.register_hook(poison)


def read_status(directory) -> RuleStatusDocument:
    return RuleStatusDocument.from_json((directory / RULE_STATUS_FILE).read_text())


def test_nan_in_the_models_input_is_reported_as_a_data_error_not_an_explosion(tmp_path):
    """A gradient that is NaN because the batch held NaN is the data's fault: the issue's kind says so, and the
    planner ends the run instead of lowering a learning rate that cannot help."""
    from contracts.rule_status import NAN_INPUT

    hook = Hook.from_configs(rule_configs=[rule("ExplodingTensor", action_json=STOP)], out_dir=tmp_path, job_name="nan")
    model, criterion, optimizer = watched_model(hook)
    with pytest.raises(StopTrainingRequested) as raised:
        for step, (inputs, labels) in enumerate(batches(10)):
            if step == 3:
                inputs[0, 2] = math.nan
            optimizer.zero_grad()
            criterion(model(inputs), labels).backward()
            optimizer.step()
    assert raised.value.step == 3
    issue = next(status for status in read_status(tmp_path).rules if status.RuleConfigurationName == "ExplodingTensor").issue
    assert issue.kind == NAN_INPUT and "the model's input at that step held 1 NaN or infinite value(s)" in issue.message


def test_an_explosion_with_finite_inputs_is_not_called_a_data_error(tmp_path):
    hook = Hook.from_configs(rule_configs=[rule("ExplodingTensor", action_json=STOP)], out_dir=tmp_path, job_name="lr")
    model, criterion, optimizer = watched_model(hook, lr=1e6)
    with pytest.raises(StopTrainingRequested):
        run_steps(model, criterion, optimizer, 50)
    issue = next(status for status in read_status(tmp_path).rules if status.RuleConfigurationName == "ExplodingTensor").issue
    assert issue.kind is None and "input" not in issue.message


@pytest.mark.parametrize("save_interval", ["1", "500"])
@pytest.mark.parametrize("register_optimizer", [True, False])
def test_nonfinite_gradient_stops_before_the_optimizer_step(tmp_path, save_interval, register_optimizer):
    bad_step = 6
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": save_interval}},
        rule_configs=[rule("ExplodingTensor", action_json=STOP), rule("LossNotDecreasing")],
        out_dir=tmp_path,
        job_name="explode",
    )
    model, criterion = small_model(), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    if register_optimizer:
        hook.register_optimizer(optimizer)
    hook.set_context(epoch=0, phase="warmup", steps_per_epoch=20, learning_rate=0.05)
    poison_gradient_at(model, lambda: hook.step, bad_step)

    optimizer_steps = 0
    weights_before_bad_step = None
    with pytest.raises(StopTrainingRequested) as raised:
        for step, (inputs, labels) in enumerate(batches(20)):
            if step == bad_step:
                weights_before_bad_step = {name: value.detach().clone() for name, value in model.state_dict().items()}
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
            optimizer_steps += 1

    assert raised.value.step == bad_step and raised.value.rule_name == "ExplodingTensor"
    assert str(raised.value).startswith(f"StopTraining: rule ExplodingTensor found an issue at step {bad_step}")
    assert optimizer_steps == bad_step  # steps 0..5 ran, step 6 never reached the optimizer
    for name, value in model.state_dict().items():
        assert torch.equal(value, weights_before_bad_step[name]), f"{name} changed at the stopped step"

    # the status document was written before raising
    document = read_status(tmp_path)
    exploding = next(status for status in document.rules if status.RuleConfigurationName == "ExplodingTensor")
    assert exploding.RuleEvaluationStatus == "IssuesFound"
    assert exploding.issue.step == bad_step and exploding.issue.tensor == "gradient/0.weight"
    assert math.isnan(exploding.issue.value) and exploding.issue.phase == "warmup"
    assert document.evidence.first_issue_step == bad_step and document.evidence.phase == "warmup"
    assert document.evidence.learning_rate_at_issue == 0.05 and document.evidence.steps_per_epoch == 20
    assert document.evidence.initial_loss is not None and document.evidence.initial_gradient_norm > 0
    assert math.isfinite(document.evidence.last_finite_loss)
    assert [(action.action, action.step) for action in document.actions] == [("StopTraining", bad_step)]
    assert (
        next(s for s in document.rules if s.RuleConfigurationName == "LossNotDecreasing").RuleEvaluationStatus
        == "InProgress"
    )

    # the first non-finite step is kept for the post-mortem whatever the save interval
    trial = create_trial(tmp_path)
    assert bad_step in trial.steps()
    assert trial.tensor("gradient/0.weight").reduction_value(bad_step, "nonfinite_count") == 16 * 6
    if save_interval == "500":
        assert trial.steps() == [0, bad_step]

    # no further training step is possible
    with pytest.raises(StopTrainingRequested):
        model(torch.randn(2, 6))
    final = hook.close(training_ended=True)
    assert final.training_ended and trial.training_ended()


def test_healthy_run_ends_with_no_issues_found(tmp_path):
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "3"}},
        rule_configs=[rule("ExplodingTensor", action_json=STOP), rule("VanishingGradient")],
        out_dir=tmp_path,
        job_name="healthy",
    )
    model, criterion, optimizer = watched_model(hook, lr=0.05)
    hook.register_optimizer(optimizer)
    run_steps(model, criterion, optimizer, 7)
    hook.record_metric("test_accuracy", 0.5)
    in_progress = read_status(tmp_path)
    assert {status.RuleEvaluationStatus for status in in_progress.rules} == {"InProgress"}
    document = hook.close()
    assert {status.RuleEvaluationStatus for status in document.rules} == {"NoIssuesFound"}
    assert document.last_step == 6 and document.training_ended
    trial = create_trial(tmp_path)
    # the save interval's steps, and step 1: VanishingGradient judges the input side at two saved steps from the start
    assert trial.steps() == [0, 1, 3, 6]
    assert trial.tensor("learning_rate").value(3) == pytest.approx(0.05)
    assert trial.tensor("test_accuracy").value(6) == pytest.approx(0.5)
    assert set(trial.tensor_names(collection="biases")) == {"0.bias", "2.bias"}
    assert "gradient/2.weight" in trial.tensor_names(collection="gradients")
    assert float(trial.tensor("CrossEntropyLoss_output_0").value(6)) == pytest.approx(hook.last_loss)
    assert trial.training_ended() and trial.rule_status().rules[0].RuleEvaluationStatus == "NoIssuesFound"
    # the same rules run offline over the saved steps
    assert not any(ExplodingTensor(trial).invoke_at_step(step) for step in trial.steps())
    assert VanishingGradient(trial, threshold=1e9).invoke_at_step(3) is True


def test_collection_save_configuration_overrides_hook_defaults(tmp_path):
    hook = Hook.from_configs(
        hook_config={
            "HookParameters": {"save_interval": "4"},
            "CollectionConfigurations": [
                {"CollectionName": "weights", "CollectionParameters": {"save_steps": "1,2", "include_regex": "^2\\."}},
                {"CollectionName": "losses"},
                {
                    "CollectionName": "gradients",
                    "CollectionParameters": {"save_interval": "2", "start_step": "2", "end_step": "7"},
                },
                {"CollectionName": "activations", "CollectionParameters": {"save_steps": "5"}},
            ],
        },
        out_dir=tmp_path,
        job_name="save-config",
    )
    run_steps(*watched_model(hook), 10)
    hook.close()
    trial = create_trial(tmp_path)
    # smdebug's semantics: save_steps are saved besides the interval; include_regex adds tensors to a collection
    assert trial.tensor("2.weight").steps() == [0, 1, 2, 4, 8]
    assert trial.tensor("0.weight").steps() == [0, 1, 2, 4, 8]
    assert trial.tensor("2.bias").collections() == ["weights"]  # matched ^2\. (biases is not configured)
    assert trial.tensor("CrossEntropyLoss_output_0").steps() == [0, 4, 8]  # hook default interval
    assert trial.tensor("gradient/0.weight").steps() == [2, 4, 6]  # [start_step, end_step) every 2
    assert not trial.has_tensor("0.bias")  # biases not configured -> not saved
    # as smdebug lists a collection: every saved tensor its patterns match, whichever collection saved it
    assert trial.tensor_names(collection="biases") == ["2.bias"]
    activation = trial.tensor("1_input_0")
    assert activation.steps() == [0, 4, 5, 8] and activation.value(5).shape == (32, 16)


def test_rule_that_raises_gets_error_status_and_training_continues(tmp_path):
    source = tmp_path / "rules" / "broken.py"
    source.parent.mkdir()
    source.write_text(
        "from debugger.rules import Rule\n"
        "class Broken(Rule):\n"
        "    def invoke_at_step(self, step):\n"
        "        if step == 2:\n"
        "            raise ZeroDivisionError('division by zero in my rule')\n"
        "        return False\n"
    )
    hook = Hook.from_configs(
        rule_configs=[
            {
                "RuleConfigurationName": "Mine",
                "RuleParameters": {"rule_to_invoke": "Broken", "custom_rule_source": "rules/broken.py"},
            },
            rule("ExplodingTensor", action_json='[{"name":"Email","endpoint":"ops@example.com"}]'),
        ],
        out_dir=tmp_path / "out",
        job_name="error",
        source_dir=tmp_path,
    )
    model, criterion, optimizer = watched_model(hook)
    poison_gradient_at(model, lambda: hook.step, 4)
    assert run_steps(model, criterion, optimizer, 6) == 6
    document = hook.close()
    mine, exploding = document.rules
    assert (
        mine.RuleEvaluationStatus == "Error" and "ZeroDivisionError: division by zero in my rule" in mine.StatusDetails
    )
    assert exploding.RuleEvaluationStatus == "IssuesFound" and exploding.issue.step == 4
    assert [(a.action, a.step, a.detail) for a in document.actions] == [("Email", 4, "ops@example.com")]


def test_status_document_is_written_only_when_a_status_changes(tmp_path):
    hook = Hook.from_configs(rule_configs=[rule("ExplodingTensor")], out_dir=tmp_path, job_name="quiet")
    model, criterion = small_model(), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    status_path = tmp_path / RULE_STATUS_FILE
    first = status_path.stat().st_mtime_ns
    written = json.loads(status_path.read_text())["updated_at"]
    for inputs, labels in batches(5):
        criterion(model(inputs), labels).backward()
    assert json.loads(status_path.read_text())["updated_at"] == written and status_path.stat().st_mtime_ns == first
    assert hook.step == 5 and np.isfinite(hook.last_gradient_norm)


def test_poor_weight_initialization_gets_the_activation_inputs_it_needs(tmp_path):
    hook = Hook.from_configs(
        hook_config={"CollectionConfigurations": [{"CollectionName": "losses"}]},
        rule_configs=[rule("PoorWeightInitialization", steps="3", threshold="1000000", activation_inputs_regex="_input_0$")],
        out_dir=tmp_path,
        job_name="init",
    )
    run_steps(*watched_model(hook), 5)
    document = hook.close()
    trial = create_trial(tmp_path)
    # the activations collection holds the inputs and outputs of activation modules; the rule's window is saved
    # (the rule's activation_inputs_regex joins the collection too: every module input is saved in its window)
    assert {"1_input_0", "1_output_0", "0_input_0"} <= set(trial.tensor_names(collection="activations"))
    assert trial.tensor("1_input_0").steps() == [0, 1, 2]
    assert trial.tensor("gradient/0.weight").steps() == [0, 1, 2]
    assert document.rules[0].RuleEvaluationStatus in ("NoIssuesFound", "IssuesFound")


def test_step_without_gradients_is_not_a_vanishing_gradient(tmp_path):
    hook = Hook.from_configs(rule_configs=[rule("VanishingGradient")], out_dir=tmp_path, job_name="no-grad")
    model = small_model()
    hook.register_module(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    hook.register_optimizer(optimizer)
    optimizer.step()  # nothing computed a gradient
    loss = nn.functional.cross_entropy(model(torch.randn(4, 6)), torch.tensor([0, 1, 2, 3]))
    hook.record_loss(loss)
    loss.backward()
    optimizer.step()
    document = hook.write_status()
    assert document.rules[0].RuleEvaluationStatus == "InProgress"
    assert hook.trial.tensor("loss_output_0").value(1) == pytest.approx(loss.detach().item())
    assert document.evidence.initial_gradient_norm is None and document.evidence.max_gradient_norm > 0


def test_an_evaluation_forward_without_set_mode_has_no_gradients_of_its_own(tmp_path):
    # smdebug's profile: every forward begins a step. A script that never calls set_mode evaluates in global steps;
    # such a step has no backward pass, so the previous training step's gradients are not its own: neither the
    # rules nor the saved step see them there (a converged CNN's stale gradient, 7.5e-10, was once judged against
    # the evaluation batch's loss, 0.1)
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, rule_configs=[rule("VanishingGradient")],
                             out_dir=tmp_path, job_name="global", profile="smdebug")
    torch.manual_seed(0)
    model, criterion = small_model(), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, labels = next(iter(batches(1)))
    optimizer.zero_grad()
    criterion(model(inputs), labels).backward()
    optimizer.step()
    with torch.no_grad():
        criterion(model(inputs), labels)  # step 1: an evaluation forward, no backward
    hook.close()
    trial = create_trial(tmp_path)
    assert trial.tensor("gradient/Sequential_0.weight").steps() == [0]
    # the step's loss (and the optimizer's rate, which the hook sees), no gradient signal
    assert set(hook.trial.signals_at(1)) - {LEARNING_RATE} == {"CrossEntropyLoss_output_0"}


def test_the_status_document_keeps_every_value_of_a_saved_metric_in_order_up_to_its_cap(tmp_path):
    """A held-out metric saved once per epoch reaches the workflow whole (the objective's course), through the
    document on disk; a scalar saved more often than the document keeps loses its course, not its latest value."""
    from contracts.rule_status import MAX_METRIC_VALUES

    hook = Hook.from_configs(hook_config={}, rule_configs=[rule("VanishingGradient")], out_dir=tmp_path, job_name="course")
    model, criterion, optimizer = watched_model(hook, lr=0.05)
    for accuracy in (0.62, 0.95, 0.81):
        run_steps(model, criterion, optimizer, 2)
        hook.save_scalar("validation:accuracy", accuracy)
    for step in range(MAX_METRIC_VALUES + 1):
        hook.record_metric("train_accuracy", step / 1000)
    hook.close()
    document = read_status(tmp_path)
    assert document.metrics["validation:accuracy"].values == pytest.approx([0.62, 0.95, 0.81])
    assert document.metrics["validation:accuracy"].value == pytest.approx(0.81)
    assert document.metrics["train_accuracy"].values is None
    assert document.metrics["train_accuracy"].value == pytest.approx(MAX_METRIC_VALUES / 1000)
