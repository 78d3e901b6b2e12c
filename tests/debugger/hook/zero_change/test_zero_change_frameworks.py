"""Zero script change for scripts a framework shapes: torch.compile'd models, PyTorch Lightning's loop (gradient
accumulation, closures), Keras 3 on the torch backend (refused, naming Keras and what watches it), watched in this process through PyTorch's global hooks, real training on tiny models."""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pytest
import pytorch_lightning as pl  # pinned in requirements-dev.txt
import torch
from torch import nn

from debugger import Hook, StopTrainingRequested, create_trial
from debugger.hook.zero_change import ZeroScriptChangeRefused
from tests.debugger.hook.zero_change.test_zero_change import RULES, batches, mlp

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported: Keras 3 on PyTorch
import keras  # noqa: E402 - pinned in requirements-dev.txt

STOP = '[{"name":"StopTraining"}]'
#: dynamo traces the global hooks the same whatever compiles its graph; "aot_eager" (dynamo + AOTAutograd, no C++
#: code generation) keeps these tests cheap: the default backend runs in jobs repaired by tests/local/test_zero_change_scripts.py
BACKEND = "aot_eager"


def values(trial, name: str) -> list[float]:
    tensor = trial.tensor(name)
    return [float(tensor.value(step)) for step in tensor.steps()]


def compiled_loop(lr: float, data, blow_up_at: int | None = None) -> list[float]:
    """A script that compiles its model and trains it; the losses of the steps it ran."""
    torch._dynamo.reset()  # each test compiles afresh, as a new job's process does
    model = torch.compile(mlp(), backend=BACKEND)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for step, (inputs, labels) in enumerate(data):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels) * (math.inf if step == blow_up_at else 1.0)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    return losses


def test_a_compiled_model_is_watched_from_outside_its_graph_and_a_healthy_run_is_not_flagged(watch):
    watcher = watch()
    losses = compiled_loop(0.05, batches(12))
    document = watcher.hook.close()
    assert [rule.RuleEvaluationStatus for rule in document.rules] == ["NoIssuesFound"] * 3
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == list(range(12))
    # the compiled wrapper is seen through: the model's own names, not "_orig_mod.0.weight"
    assert "gradient/0.weight" in trial.tensor_names() and not any("_orig_mod" in name for name in trial.tensor_names())
    assert values(trial, "loss_output_0") == pytest.approx(losses, rel=1e-5)
    assert all(math.isfinite(value) and value > 0 for value in values(trial, "total_gradient_norm"))


def test_an_exploding_compiled_model_is_stopped_at_its_first_nonfinite_step_before_the_update(watch):
    watcher = watch(rules=RULES[:1])
    with pytest.raises(StopTrainingRequested) as stopped:
        compiled_loop(0.05, batches(12), blow_up_at=7)
    assert stopped.value.rule_name == "ExplodingTensor" and stopped.value.step == 7
    assert watcher.hook.status_document().last_step == 7


# ---------------------------------------------------------------------------------------------- PyTorch Lightning

class Classifier(pl.LightningModule):
    def __init__(self, blow_up_at: int | None = None):
        super().__init__()
        self.net = mlp()
        self.blow_up_at = blow_up_at
        self.micro_batch_losses: list[float] = []

    def training_step(self, batch, index):
        loss = nn.functional.cross_entropy(self.net(batch[0]), batch[1])
        if index == self.blow_up_at:
            loss = loss * math.inf
        self.micro_batch_losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def fit(module: pl.LightningModule, accumulate: int, micro_batches: int = 8) -> None:
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    inputs, labels = zip(*batches(micro_batches), strict=True)
    data = torch.utils.data.TensorDataset(torch.cat(inputs), torch.cat(labels))
    trainer = pl.Trainer(
        max_epochs=1, accumulate_grad_batches=accumulate, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=32))


def test_lightning_gradient_accumulation_is_one_step_per_optimizer_step_with_the_steps_loss(watch):
    """Lightning runs the last micro-batch of an accumulated step inside optimizer.step's closure and divides each
    micro-batch's loss by accumulate_grad_batches: the step's loss is the sum of its backward tensors, the mean of its
    micro-batches' losses (it was once the first micro-batch's half alone, checked before the closure ran)."""
    watcher = watch()
    module = Classifier()
    fit(module, accumulate=2)
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == [0, 1, 2, 3]  # 8 micro-batches, 4 optimizer steps
    micro = module.micro_batch_losses
    expected = [(micro[i] + micro[i + 1]) / 2 for i in range(0, 8, 2)]
    assert values(trial, "loss_output_0") == pytest.approx(expected, rel=1e-5)
    assert watcher.hook.status_document().evidence.initial_loss == pytest.approx(expected[0], rel=1e-5)


def test_lightning_accumulation_is_judged_on_the_whole_steps_gradients(watch):
    """A blow-up in an accumulated step's last micro-batch (run inside the closure) is found at that optimizer step,
    before its update: the gradients judged are the step's, not its first micro-batch's."""
    watch(rules=RULES[:1])
    with pytest.raises(StopTrainingRequested) as stopped:
        fit(Classifier(blow_up_at=5), accumulate=2)  # micro-batch 5: the second of optimizer step 2
    assert stopped.value.step == 2


def test_a_plain_loop_calling_backward_twice_per_step_reports_the_summed_loss(watch):
    watcher = watch()
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    expected = []
    data = batches(8)
    for start in range(0, 8, 2):
        optimizer.zero_grad()
        step_loss = 0.0
        for inputs, labels in data[start : start + 2]:
            loss = nn.functional.cross_entropy(model(inputs), labels)  # not divided: the sum is the step's loss
            loss.backward()
            step_loss += loss.item()
        expected.append(step_loss)
        optimizer.step()
    watcher.hook.close()
    trial = create_trial(watcher.hook.out_dir)
    assert trial.steps() == [0, 1, 2, 3]
    assert values(trial, "loss_output_0") == pytest.approx(expected, rel=1e-5)
    assert watcher.hook.status_document().evidence.initial_loss == pytest.approx(expected[0], rel=1e-5)


# ---------------------------------------------------------------------------------------------- Keras 3 (torch backend)


def keras_fit(learning_rate: float, hook_config_dir=None) -> tuple[keras.Model, Hook | None]:
    """A Keras 3 script: a small classifier fitted for one epoch of 8 batches; with ``hook_config_dir`` it watches
    itself as the refusal advises (register_module before fit)."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
    hook = None
    if hook_config_dir is not None:
        hook = Hook.from_configs({"HookParameters": {"save_interval": "1"}}, RULES, out_dir=hook_config_dir, job_name="k")
        hook.register_module(model)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    generator = np.random.default_rng(0)
    inputs, labels = generator.normal(size=(256, 6)).astype("float32"), generator.integers(0, 4, 256)
    model.fit(inputs, labels, batch_size=32, epochs=1, verbose=0)
    return model, hook


def test_a_keras_script_is_refused_naming_keras_and_what_would_watch_it(watch):
    watcher = watch()
    with pytest.raises(ZeroScriptChangeRefused) as refused:
        keras_fit(0.01)
    assert str(refused.value) == (
        f"the script trains with Keras {keras.__version__} (torch backend), whose trainer applies its own optimizer's "
        "updates: no torch.optim optimizer step, which is where the zero-change hook counts and checks a step; watch it "
        "from the script instead: a Keras 3 model on the torch backend is a torch.nn.Module, so import "
        "smdebug.pytorch as smd; hook = smd.Hook.create_from_json_file(); hook.register_module(model) before "
        "model.fit(): that hook checks each step at the end of its backward (see debugger/README.md)"
    )
    assert watcher.stood_aside and watcher.hook is None


def test_the_hook_the_keras_refusal_advises_watches_a_keras_script(tmp_path):
    """What the refusal tells a Keras user to do works: a healthy fit is not flagged, one at an absurd rate is stopped
    at the first step whose gradients are non-finite, before Keras applies them."""
    _, hook = keras_fit(0.01, tmp_path / "healthy")
    document = hook.close()
    assert document.last_step == 7 and [rule.RuleEvaluationStatus for rule in document.rules] == ["NoIssuesFound"] * 3
    with pytest.raises(StopTrainingRequested) as stopped:
        keras_fit(1e30, tmp_path / "exploding")
    assert stopped.value.rule_name == "ExplodingTensor" and stopped.value.step == 1
