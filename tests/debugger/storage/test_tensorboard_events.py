"""The hook's TensorBoard event files, read back with TensorBoard's own reader (its EventAccumulator)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn

import smdebug.pytorch as smd
from contracts import ContractError
from contracts.job import INPUT_CONFIG_DIR_ENV, TENSORBOARD_CONFIG_FILE, TENSORBOARD_CONFIG_FILE_ENV
from debugger import Hook, StopTrainingRequested
from debugger.storage import tensorboard_events as tb

STOP = '[{"name":"StopTraining"}]'


def rule(name: str, **parameters: str) -> dict:
    return {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **parameters}}


def events(directory) -> EventAccumulator:
    """Everything the event files hold (size_guidance 0: no sampling, every step kept)."""
    accumulator = EventAccumulator(str(directory), size_guidance={"scalars": 0, "histograms": 0})
    accumulator.Reload()
    return accumulator


def scalar_steps(accumulator: EventAccumulator, tag: str) -> list[int]:
    return [event.step for event in accumulator.Scalars(tag)]


def train(hook, steps: int, lr: float = 0.05, poison_step: int | None = None) -> int:
    torch.manual_seed(0)
    model, criterion = nn.Sequential(nn.Linear(6, 8), nn.ELU(), nn.Linear(8, 3)), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    hook.register_optimizer(optimizer)
    generator = torch.Generator().manual_seed(1)
    done = 0
    for step in range(steps):
        inputs, labels = torch.randn(16, 6, generator=generator), torch.randint(0, 3, (16,), generator=generator)
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        if step == poison_step:
            loss = loss * math.inf
        loss.backward()
        optimizer.step()
        done += 1
    return done


@pytest.fixture
def sagemaker_config(tmp_path, monkeypatch):
    """The file SageMaker writes for a TensorBoardOutputConfig, found as a job finds it (SM_INPUT_CONFIG_DIR)."""
    config_dir = tmp_path / "input" / "config"
    config_dir.mkdir(parents=True)
    local_path = tmp_path / "output" / "tensorboard"
    (config_dir / TENSORBOARD_CONFIG_FILE).write_text(
        json.dumps({"LocalPath": str(local_path), "S3OutputPath": "s3://bucket/debug-output/"})
    )
    monkeypatch.delenv(TENSORBOARD_CONFIG_FILE_ENV, raising=False)
    monkeypatch.setenv(INPUT_CONFIG_DIR_ENV, str(config_dir))
    return local_path


def test_a_job_writes_scalars_every_step_and_histograms_at_the_save_interval(tmp_path, sagemaker_config):
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "5"}},
        rule_configs=[rule("ExplodingTensor"), rule("VanishingGradient")],
        out_dir=tmp_path / "debug",
        job_name="tb-job",
    )
    assert train(hook, 12) == 12
    hook.close()

    found = events(sagemaker_config)
    tags = found.Tags()
    assert {"loss", "learning_rate", "gradient_norm/total", "weight_norm/total", "rules/ExplodingTensor",
            "rules/VanishingGradient"} <= set(tags["scalars"])  # fmt: skip
    for tag in ("loss", "learning_rate", "gradient_norm/total", "weight_norm/total", "rules/ExplodingTensor"):
        assert scalar_steps(found, tag) == list(range(12)), tag
    assert [event.value for event in found.Scalars("learning_rate")] == pytest.approx([0.05] * 12)
    assert all(event.value == 0.0 for event in found.Scalars("rules/ExplodingTensor"))
    # histograms and per-parameter norms at the saved steps only: 0, 5, 10 (and the gradients at step 1, saved for
    # VanishingGradient's second look at the input side)
    assert {"weights/0.weight", "weights/2.bias", "gradients/0.weight", "gradients/2.bias"} <= set(tags["histograms"])
    assert [event.step for event in found.Histograms("gradients/0.weight")] == [0, 1, 5, 10]
    assert scalar_steps(found, "gradient_norm/0.weight") == [0, 1, 5, 10]
    first = found.Histograms("weights/0.weight")[0].histogram_value
    assert first.num == 6 * 8  # every weight of the layer counted


def test_the_step_a_rule_stops_shows_the_explosion_and_the_rule_firing(tmp_path, sagemaker_config):
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "100"}},
        rule_configs=[rule("ExplodingTensor", action_json=STOP)],
        out_dir=tmp_path / "debug",
        job_name="tb-explode",
    )
    with pytest.raises(StopTrainingRequested):
        train(hook, 10, poison_step=3)
    hook.close(training_ended=False)

    found = events(sagemaker_config)
    rule_values = {event.step: event.value for event in found.Scalars("rules/ExplodingTensor")}
    assert rule_values == {0: 0.0, 1: 0.0, 2: 0.0, 3: 1.0}
    norms = {event.step: event.value for event in found.Scalars("gradient_norm/total")}
    assert sorted(norms) == [0, 1, 2, 3] and not math.isfinite(norms[3]) and math.isfinite(norms[2])
    # the first non-finite step is saved whatever the interval, so its histograms are there (finite values only)
    assert [event.step for event in found.Histograms("weights/0.weight")] == [0, 3]


def test_non_finite_values_written_to_tensorboard_are_said_once_by_the_debugger(tmp_path, sagemaker_config, capfd):
    """tensorboardX warned "NaN or Inf found in input tensor." for each such value, several times a job and with no
    word of whose it was: the debugger says it once, as its own line, naming the tag and the step."""
    writer = tb.TensorBoardEvents(tmp_path / "events")
    for step, loss in enumerate([1.0, math.nan, math.inf]):
        writer.training_step(
            step, loss=loss, gradient_norm=loss, learning_rate=0.1, parameters=[], rule_statuses=[], saved=False
        )
    writer.close()
    lines = capfd.readouterr().err.splitlines()
    assert not [line for line in lines if "NaN or Inf found" in line]
    said = [line for line in lines if "TensorBoard events" in line]
    assert said == [
        "[debugger] TensorBoard events: loss is nan at step 1, written as it is (TensorBoard draws no point there); "
        "said once per job, for every non-finite value the debugger writes there"
    ]


def test_no_configuration_no_files(tmp_path, monkeypatch):
    monkeypatch.setenv(INPUT_CONFIG_DIR_ENV, str(tmp_path / "no-config-here"))
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, out_dir=tmp_path / "debug")
    assert hook.tensorboard is None
    train(hook, 2)
    hook.close()
    assert not list(tmp_path.rglob("events.out.tfevents.*"))


def test_smdebug_hook_parameters_export_tensorboard_as_smdebug_does(tmp_path, monkeypatch):
    monkeypatch.setenv(INPUT_CONFIG_DIR_ENV, str(tmp_path / "no-config-here"))
    hook = smd.Hook(out_dir=str(tmp_path / "run"), export_tensorboard=True, save_config=smd.SaveConfig(save_interval=2))
    train(hook, 4)
    hook.close()
    found = events(tmp_path / "run" / "tensorboard")  # smdebug: {out_dir}/tensorboard without a tensorboard_dir
    assert scalar_steps(found, "loss") == [0, 1, 2, 3]
    hook = smd.Hook(out_dir=str(tmp_path / "run2"), tensorboard_dir=str(tmp_path / "tb"))
    train(hook, 2)
    hook.close()
    assert scalar_steps(events(tmp_path / "tb"), "gradient_norm/total") == [0, 1]


def test_bad_tensorboard_settings_name_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv(INPUT_CONFIG_DIR_ENV, str(tmp_path / "no-config-here"))
    with pytest.raises(ContractError, match="tensorboard_dir: must be a local directory"):
        smd.Hook(out_dir=str(tmp_path / "run"), tensorboard_dir="s3://bucket/tb")
    bad = tmp_path / "tb.json"
    bad.write_text("{not json")
    monkeypatch.setenv(TENSORBOARD_CONFIG_FILE_ENV, str(bad))
    with pytest.raises(ContractError, match="TensorBoard configuration must be a JSON file"):
        tb.tensorboard_directory(False, None, tmp_path)


def test_finite_weights_beyond_tensorboards_buckets_still_get_a_histogram(tmp_path):
    """A run on its way to exploding saves weights of 1e25 (finite, past TensorBoard's buckets at about 1e20): their
    histogram is written with numpy's bins instead of ending the job on "The histogram is empty"."""
    writer = tb.TensorBoardEvents(tmp_path / "tb")
    layer = nn.Linear(3, 2)
    with torch.no_grad():
        layer.weight.fill_(1e25)
    layer.weight.grad = torch.full_like(layer.weight, 2.0)
    writer.training_step(
        5, loss=1.0, gradient_norm=1.0, learning_rate=0.1,
        parameters=[("layer.weight", layer.weight)], rule_statuses=[], saved=True,
    )  # fmt: skip
    writer.close()
    accumulator = events(tmp_path / "tb")
    (weights,) = accumulator.Histograms(tb.WEIGHT_HISTOGRAM_PREFIX + "layer.weight")
    (gradients,) = accumulator.Histograms(tb.GRADIENT_HISTOGRAM_PREFIX + "layer.weight")
    assert weights.step == 5 and weights.histogram_value.max == pytest.approx(1e25, rel=1e-6)
    assert gradients.histogram_value.max == 2.0
