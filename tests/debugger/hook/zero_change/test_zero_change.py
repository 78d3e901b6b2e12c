"""Zero script change for PyTorch: plain training loops (no hook in them) watched through PyTorch's global hooks, in
this process, with the job's hook writing to a temporary directory."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import smdebug.pytorch as smd
from debugger import Hook, StopTrainingRequested, create_trial
from debugger.core.modes import ModeKeys
from debugger.hook.zero_change import ZeroScriptChangeRefused

STOP = '[{"name":"StopTraining"}]'


def rule(name: str, **parameters: str) -> dict:
    return {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **parameters}}


RULES = [rule("ExplodingTensor", action_json=STOP), rule("VanishingGradient"), rule("LossNotDecreasing")]


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))


def batches(count: int, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(32, 6, generator=generator), torch.randint(0, 4, (32,), generator=generator)) for _ in range(count)]


def plain_loop(model, optimizer, data, loss_fn=None) -> int:
    """A training loop as people write it, with no hook; returns the steps it ran."""
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    done = 0
    for inputs, labels in data:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), labels)
        loss.backward()
        optimizer.step()
        done += 1
    return done


def values(trial, name: str) -> list[float]:
    tensor = trial.tensor(name)
    return [float(tensor.value(step)) for step in tensor.steps()]


def test_a_plain_loop_is_recorded_and_judged_as_an_explicit_hook_records_it(watch, tmp_path):
    data = batches(6)
    explicit = Hook.from_configs({"HookParameters": {"save_interval": "1"}}, RULES, out_dir=tmp_path / "explicit", job_name="e")
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    explicit.register_module(model)
    explicit.register_loss(loss_fn)
    explicit.register_optimizer(optimizer)
    plain_loop(model, optimizer, data, loss_fn)
    explicit.close()

    watcher = watch()
    model = mlp()
    assert plain_loop(model, torch.optim.SGD(model.parameters(), lr=0.1), data) == 6
    document = watcher.hook.close()

    zero, reference = create_trial(tmp_path / "zero"), create_trial(tmp_path / "explicit")
    assert zero.steps() == reference.steps() == list(range(6))  # one step per optimizer step
    assert zero.steps(mode=ModeKeys.TRAIN) == list(range(6))
    assert zero.tensor_names() == reference.tensor_names()  # the same names: 0.weight, gradient/2.bias, ...
    assert "gradient/0.weight" in zero.tensor_names() and "CrossEntropyLoss_output_0" in zero.tensor_names()
    for name in ("CrossEntropyLoss_output_0", "total_gradient_norm", "learning_rate"):
        assert values(zero, name) == pytest.approx(values(reference, name))
    np.testing.assert_allclose(zero.tensor("gradient/2.weight").value(5), reference.tensor("gradient/2.weight").value(5))
    assert [rule.RuleEvaluationStatus for rule in document.rules] == ["NoIssuesFound"] * 3
    assert document.evidence.initial_loss == pytest.approx(values(reference, "CrossEntropyLoss_output_0")[0])


def first_nonfinite_step(lr: float, data) -> int:
    """Where a plain loop's loss or gradients first turn non-finite, found without any hook."""
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step, (inputs, labels) in enumerate(data):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters()])
        if not (math.isfinite(loss.item()) and math.isfinite(float(norm))):
            return step
        optimizer.step()
    raise AssertionError("the run never exploded")


def test_an_exploding_plain_loop_is_stopped_at_its_first_nonfinite_step_before_the_update(watch):
    data = batches(40)
    expected = first_nonfinite_step(40.0, data)
    watcher = watch(rules=RULES[:1], save_interval="500")
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=40.0, momentum=0.9)
    with pytest.raises(StopTrainingRequested) as stopped:
        for inputs, labels in data:
            weights_before = {name: p.detach().clone() for name, p in model.named_parameters()}
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
    assert stopped.value.rule_name == "ExplodingTensor" and stopped.value.step == expected
    # the bad step was never applied: the weights are those the previous step left
    for name, parameter in model.named_parameters():
        assert torch.equal(parameter.detach(), weights_before[name]) and torch.isfinite(parameter).all()
    status = watcher.hook.status_document()
    assert status.rules[0].issue.step == expected and status.evidence.first_issue_step == expected
    assert status.last_step == expected
    assert (watcher.hook.out_dir / "steps" / f"{expected:012d}.npz").exists()  # the first non-finite step is saved


def test_gradient_accumulation_is_one_step_per_optimizer_step_and_its_loss_the_sum_of_the_backward_tensors(watch):
    watcher = watch()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    micro = batches(12)
    expected_losses = []
    for start in range(0, 12, 4):  # 4 micro-batches per optimizer step
        optimizer.zero_grad()
        total = 0.0
        for inputs, labels in micro[start : start + 4]:
            loss = loss_fn(model(inputs), labels) / 4
            loss.backward()
            total += loss.item()
        expected_losses.append(total)
        optimizer.step()
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == [0, 1, 2]
    assert values(trial, "loss_output_0") == pytest.approx(expected_losses)  # loss / 4 is no loss module's output


def test_evaluation_forwards_are_eval_steps_judged_on_the_loss_modules_output(watch):
    watcher = watch()
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    validation = batches(1, seed=7)[0]
    evaluation_losses = []
    for epoch in range(2):
        model.train()
        plain_loop(model, optimizer, batches(3, seed=epoch), loss_fn)
        model.eval()
        with torch.no_grad():
            evaluation_losses.append(loss_fn(model(validation[0]), validation[1]).item())
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == list(range(8))
    assert [trial.mode(step) for step in trial.steps()] == [ModeKeys.TRAIN] * 3 + [ModeKeys.EVAL] + [ModeKeys.TRAIN] * 3 + [ModeKeys.EVAL]
    loss = trial.tensor("CrossEntropyLoss_output_0")
    assert [float(loss.value(step)) for step in (3, 7)] == pytest.approx(evaluation_losses)
    assert not trial.tensor("gradient/0.weight").has_step(3)  # no gradients at an evaluation step


def test_several_models_under_one_optimizer_and_several_optimizers_after_one_backward(watch):
    watcher = watch()
    torch.manual_seed(0)
    encoder, head = nn.Sequential(nn.Linear(6, 8), nn.ReLU()), nn.Linear(8, 4)
    optimizers = [torch.optim.SGD(encoder.parameters(), lr=0.1), torch.optim.Adam(head.parameters(), lr=0.01)]
    for inputs, labels in batches(3):
        for optimizer in optimizers:
            optimizer.zero_grad()
        nn.functional.cross_entropy(head(encoder(inputs)), labels).backward()
        for optimizer in optimizers:
            optimizer.step()
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == [0, 1, 2]  # one step per backward, whatever the number of optimizers
    gradients = trial.tensor_names(collection="gradients")
    assert {"gradient/0.weight", "gradient/Linear.weight", "gradient/Linear.bias"} <= set(gradients)


def test_a_step_whose_closure_runs_backward_is_checked_before_the_update(watch):
    """optimizer.step(closure), as PyTorch Lightning and LBFGS run a step: judged at the closure's first backward."""
    watcher = watch(rules=RULES[:1])
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(StopTrainingRequested) as stopped:
        for step, (inputs, labels) in enumerate(batches(6)):
            weights_before = [p.detach().clone() for p in model.parameters()]

            def closure(inputs=inputs, labels=labels, step=step):
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(model(inputs), labels) * (math.inf if step == 3 else 1.0)
                loss.backward()
                return loss

            optimizer.step(closure)
    assert stopped.value.step == 3
    assert all(torch.equal(p.detach(), before) for p, before in zip(model.parameters(), weights_before, strict=True))

    lbfgs_model = mlp()
    lbfgs = torch.optim.LBFGS(lbfgs_model.parameters(), max_iter=4)  # evaluates the closure several times a step
    watcher.uninstall()
    watcher = watch(rules=RULES[:1], out_dir=watcher.hook.out_dir.parent / "lbfgs")
    inputs, labels = batches(1)[0]
    first_losses = []

    def lbfgs_closure():
        lbfgs.zero_grad()
        loss = nn.functional.cross_entropy(lbfgs_model(inputs), labels)
        loss.backward()
        return loss

    for _ in range(3):
        first_losses.append(nn.functional.cross_entropy(lbfgs_model(inputs), labels).item())
        lbfgs.step(lbfgs_closure)
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2]  # one step per optimizer step
    assert values(trial, "loss_output_0") == pytest.approx(first_losses, rel=1e-5)  # each step's first evaluation


def test_optimizers_taking_turns_each_after_its_own_backward_are_refused(watch):
    watcher = watch()
    torch.manual_seed(0)
    generator, discriminator = nn.Linear(4, 6), nn.Sequential(nn.Linear(6, 1))
    g_optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
    d_optimizer = torch.optim.SGD(discriminator.parameters(), lr=1e-2)
    with pytest.raises(ZeroScriptChangeRefused) as refused:
        for _ in range(3):
            d_optimizer.zero_grad()
            discriminator(generator(torch.randn(8, 4)).detach()).mean().backward()
            d_optimizer.step()
            g_optimizer.zero_grad()
            (-discriminator(generator(torch.randn(8, 4))).mean()).backward()
            g_optimizer.step()
    message = str(refused.value)
    assert "steps 2 optimizers (SGD over 2 parameter tensors, Adam over 2 parameter tensors) in turn" in message
    assert "smd.Hook.create_from_json_file()" in message
    assert watcher.stood_aside and watcher.hook is None


def test_a_script_that_updates_its_parameters_itself_is_refused(watch):
    watch()
    model = mlp()
    with pytest.raises(ZeroScriptChangeRefused, match="the script updates them itself"):
        for inputs, labels in batches(3):
            model.zero_grad()
            nn.functional.cross_entropy(model(inputs), labels).backward()
            with torch.no_grad():
                for parameter in model.parameters():
                    parameter -= 0.1 * parameter.grad


def test_amp_grad_scaler_skipped_steps_are_not_explosions_and_the_loss_is_recorded_unscaled(watch):
    watcher = watch()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**40)  # overflows in float16 until the scale comes down
    loss_fn = nn.CrossEntropyLoss()
    skipped, losses = 0, []
    for inputs, labels in batches(30):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = loss_fn(model(inputs), labels)
        losses.append(loss.item())
        scaler.scale(loss).backward()
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        skipped += scaler.get_scale() < scale
    assert skipped >= 3  # the scaler found non-finite gradients and skipped those optimizer steps
    document = watcher.hook.close()
    assert document.rules[0].RuleEvaluationStatus == "NoIssuesFound"  # no ExplodingTensor for the scale's overflow
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == list(range(30))  # a skipped step is a step
    assert values(trial, "CrossEntropyLoss_output_0") == pytest.approx(losses, rel=1e-3)  # unscaled, named
    norms = trial.tensor("total_gradient_norm")
    assert len(norms.steps()) == 30 - skipped and all(math.isfinite(float(norms.value(s))) for s in norms.steps())


def test_a_nonfinite_loss_under_amp_is_an_explosion(watch):
    watch()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    iteration = None
    with pytest.raises(StopTrainingRequested) as stopped:
        for iteration, (inputs, labels) in enumerate(batches(10)):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = nn.functional.cross_entropy(model(inputs * (math.inf if iteration == 4 else 1.0)), labels)
            scaler.scale(loss).backward()
            scaler.step(optimizer)  # skipped at iteration 4: the scaler finds the gradients non-finite
            scaler.update()  # where that step is judged, on its loss
    assert stopped.value.step == 4 and iteration == 4


def test_a_hook_the_script_creates_before_training_wins_and_nothing_is_saved_twice(watch, tmp_path):
    watcher = watch()
    model = mlp()
    hook = smd.Hook(out_dir=str(tmp_path / "zero"), include_collections=["gradients"], save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    plain_loop(model, torch.optim.SGD(model.parameters(), lr=0.1), batches(3))
    hook.close()
    assert watcher.stood_aside and watcher.hook is None
    names = create_trial(tmp_path / "zero").tensor_names()
    assert "gradient/Sequential_0.weight" in names and "gradient/0.weight" not in names  # the script's hook only


def test_a_hook_the_script_creates_after_training_began_replaces_the_automatic_one(watch, tmp_path):
    watcher = watch()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    plain_loop(model, optimizer, batches(3))
    watcher.hook._flush_writer()
    assert len(list((tmp_path / "zero" / "steps").iterdir())) == 3
    hook = smd.Hook(out_dir=str(tmp_path / "zero"), include_collections=["gradients"], save_config=smd.SaveConfig(save_interval=1))
    hook.register_module(model)
    plain_loop(model, optimizer, batches(2, seed=5))
    hook.close()
    assert watcher.stood_aside and watcher.hook is None
    trial = create_trial(tmp_path / "zero")
    assert trial.steps() == [0, 1]  # the script's hook's run, from its own step 0
    assert "gradient/0.weight" not in trial.tensor_names()


def test_forward_passes_in_a_forked_data_loading_worker_are_not_watched(watch):
    watcher = watch()
    augment = nn.Linear(6, 6)  # a learned augmentation run in the worker process

    class Data(torch.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, index):
            inputs, labels = batches(1, seed=index)[0]
            return augment(inputs).detach(), labels

    model = mlp()
    loader = torch.utils.data.DataLoader(Data(), batch_size=None, num_workers=1, multiprocessing_context="fork")
    plain_loop(model, torch.optim.SGD(model.parameters(), lr=0.1), loader)
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == [0, 1, 2, 3]
    assert not any(name.startswith("weight") for name in trial.tensor_names())  # the worker's module never adopted


def test_a_plain_script_gets_the_same_structural_zeros_skipped_as_an_explicit_hook(watch):
    """A Linear's bias feeding a BatchNorm has a zero gradient by construction; a frozen layer gets none: the
    automatic hook finds both from the model it adopts, so VanishingGradient judges the tensors that can carry a
    signal and stays quiet on a healthy run."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    for parameter in model[3].parameters():
        parameter.requires_grad = False
    watcher = watch()
    plain_loop(model, torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1), batches(6))
    assert model[0].bias.grad.abs().max() < 1e-6  # the structural zero is there
    silent = watcher.hook.trial.silent_tensors
    assert "zero by construction" in silent["gradient/0.bias"]
    assert "frozen" in silent["3.weight"] and "frozen" in silent["3.bias"]
    assert "gradient/0.weight" not in silent and "gradient/5.bias" not in silent
    document = watcher.hook.close()
    assert [rule.RuleEvaluationStatus for rule in document.rules] == ["NoIssuesFound"] * 3


def test_a_plain_loop_has_its_training_labels_counted(watch, tmp_path):
    """A script with no hook: its nn.CrossEntropyLoss's labels are counted as an explicit hook's register_loss counts
    them (issue 21: the planner reads a rare class from them)."""
    watcher = watch()
    model = mlp()
    data = batches(5)
    plain_loop(model, torch.optim.SGD(model.parameters(), lr=0.05), data)
    watcher.uninstall()
    evidence = watcher.hook.close().evidence
    expected = sum(torch.bincount(labels, minlength=4) for _, labels in data)
    assert evidence.label_counts == expected.tolist()
    assert all(window.agreement is not None for window in evidence.loss_windows)
    assert evidence.training_dropout is None


def test_a_plain_loop_reports_the_dropout_its_model_trained_with(watch):
    """The planner does not read wrong labels from a match that dropout lowered (contracts.training_labels): the
    automatic hook reports the dropout of the model it adopts, as an explicit hook does."""
    watcher = watch()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 4))
    plain_loop(model, torch.optim.SGD(model.parameters(), lr=0.05), batches(5))
    watcher.uninstall()
    assert watcher.hook.close().evidence.training_dropout == 0.3


def test_a_plain_loop_reports_how_many_of_its_training_inputs_came_back_unchanged(watch):
    """Three passes over the same 5 batches: the automatic hook saw two thirds of the rows before (contracts.
    training_inputs); the same loop adding noise to each batch, as an augmenting loader does, repeated none."""
    data = batches(5)
    for augment, expected in ((False, 2 / 3), (True, 0.0)):
        watcher = watch()
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
        passes = [(inputs + 0.1 * torch.randn_like(inputs) if augment else inputs, labels) for inputs, labels in data * 3]
        plain_loop(model, torch.optim.SGD(model.parameters(), lr=0.05), passes)
        watcher.uninstall()
        assert watcher.hook.close().evidence.training_inputs_repeated == pytest.approx(expected, abs=1e-4)


def test_the_global_module_hooks_are_on_only_until_the_models_are_found_and_at_steps_that_save(watch):
    """Between saved steps every other module call of the process takes nn.Module's fast path: the model and the
    loss found at the first step are watched by hooks of their own, which still begin training and evaluation steps
    and name the loss; a step that saves turns the global hooks on again for its modules' inputs and outputs."""
    watcher = watch(save_interval="4")
    global_hooks_on_in_forward: list[bool] = []

    class Probe(nn.Module):
        def forward(self, inputs):
            global_hooks_on_in_forward.append(bool(watcher._module_handles))
            return inputs

    torch.manual_seed(0)
    model, loss_fn = nn.Sequential(nn.Linear(6, 16), Probe(), nn.ReLU(), nn.Linear(16, 4)), nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    validation = batches(1, seed=7)[0]
    for epoch in range(2):
        model.train()
        plain_loop(model, optimizer, batches(4, seed=epoch), loss_fn)
        model.eval()
        with torch.no_grad():
            loss_fn(model(validation[0]), validation[1])
    assert not watcher._module_handles  # off between steps
    # TRAIN steps 0-3 (mode steps 0 and 1 save: VanishingGradient's second look at the input side), EVAL 4 (eval mode
    # step 0 saves), TRAIN 5-8 (mode step 4 saves), EVAL 9
    assert global_hooks_on_in_forward == [True, True, False, False, True, True, False, False, False, False]
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert [trial.mode(step) for step in trial.steps()] == [ModeKeys.TRAIN, ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.TRAIN]
    assert trial.steps() == [0, 1, 4, 5]
    loss = trial.tensor("CrossEntropyLoss_output_0")  # named from the loss module, watched by its own hook
    assert loss.steps() == [0, 4, 5]
