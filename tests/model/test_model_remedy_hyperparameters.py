"""The example's hyperparameters the built-in remedies change (lambdas.remediation.planning.remedies.sets) do what their names
say: clipping, dropout, initial scale, class weights, input normalisation, early stopping that keeps the best
epoch, and a resumed job that continues from the checkpoints with the new job's hyperparameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from model.data import generate_synthetic_dataset, write_channel
from model.hyperparameters import HyperparameterError, TrainingHyperparameters
from model.resnet import build_resnet
from model.train import class_weights, load_model, to_model_input


def test_balanced_class_weights_are_inverse_frequencies_and_absent_classes_weigh_nothing():
    labels = np.array([0] * 8 + [1] * 2)
    weights = class_weights(labels, num_classes=3)
    assert weights.tolist() == pytest.approx([10 / (2 * 8), 10 / (2 * 2), 0.0])


def test_inputs_without_normalisation_are_the_raw_pixel_values():
    images = np.full((2, 32, 32, 3), 200, dtype=np.uint8)
    assert to_model_input(images, None).shape == (2, 3, 32, 32)
    assert float(to_model_input(images, None).mean()) == 200.0
    assert abs(float(to_model_input(images, torch.full((3,), 200 / 255)).mean())) < 1e-6


def test_init_scale_zero_gives_all_zero_weights_and_dropout_adds_no_parameters():
    zero = build_resnet(depth=8, init_scale=0.0)
    assert all(float(module.weight.abs().sum()) == 0 for module in zero.modules() if isinstance(module, nn.Conv2d))
    plain, dropped = build_resnet(depth=8), build_resnet(depth=8, dropout=0.3)
    assert isinstance(dropped.dropout, nn.Dropout) and dropped.dropout.p == 0.3
    assert plain.state_dict().keys() == dropped.state_dict().keys()  # a checkpoint loads across a dropout change
    wide = build_resnet(depth=8, init_scale=4.0)
    assert float(wide.head.weight.std()) == pytest.approx(4 * float(plain.head.weight.std()), rel=0.2)


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("class_weighting", "inverse", "must be one of none, balanced"),
        ("dropout", 1.0, "must be >= 0.0 and < 1.0"),
        ("grad_clip", -1.0, "must be >= 0.0"),
        ("init_scale", -0.5, "must be >= 0.0"),
    ],
)
def test_bad_remedy_hyperparameters_name_the_field(field, value, fragment):
    with pytest.raises(HyperparameterError) as caught:
        TrainingHyperparameters(**{field: value})
    assert caught.value.field == field and fragment in str(caught.value)


@pytest.fixture
def memorising_channels(tmp_path):
    """A held-out set whose labels have nothing to do with the images: whatever the network learns from the
    training set makes the held-out loss worse, so the best held-out epoch is an early one."""
    x_train, y_train = generate_synthetic_dataset(256, seed=0)
    x_test, _ = generate_synthetic_dataset(128, seed=1)
    y_test = np.random.default_rng(5).integers(0, 10, len(x_test)).astype(np.int64)
    return {"train": write_channel(tmp_path / "train", x_train, y_train), "test": write_channel(tmp_path / "test", x_test, y_test)}


@pytest.mark.training
def test_early_stopping_keeps_the_best_epoch_and_a_resumed_job_continues_with_its_own_hyperparameters(
    memorising_channels, job_dirs, run_training_job
):
    environment = job_dirs.environment(memorising_channels)
    common = ["--depth", "8", "--add_batch_norm", "true", "--batch_size", "64", "--warmup_epochs", "0"]
    first = run_training_job([*common, "--num_epochs", "3", "--learning_rate", "0.05"], environment, cwd=job_dirs.root)
    assert first.exit_code == 0, first.stderr
    assert [line["epoch"] for line in first.epochs] == [0, 1, 2]

    # The next job finds the checkpoints (as a resumed SageMaker job finds CheckpointConfig's files) and stops
    # early: patience 1 against the best held-out loss so far.
    second = run_training_job(
        [*common, "--num_epochs", "12", "--learning_rate", "0.02", "--weight_decay", "0.001",
         "--early_stopping_patience", "1"],
        environment,
        cwd=job_dirs.root,
    )
    assert second.exit_code == 0, second.stderr
    assert "resuming from checkpoint" in second.stdout and "continuing at epoch 3" in second.stdout
    assert "early stopping: no better held-out loss for 1 epochs" in second.stdout
    epochs = second.epochs
    trained, final = epochs[:-1], epochs[-1]
    # patience counts from the best epoch, the first job's included: it may have run out already at epoch 3
    assert [line["epoch"] for line in trained] == list(range(3, 3 + len(trained))) and len(trained) < 9
    all_epochs = first.epochs + trained
    best = min(all_epochs, key=lambda line: line["test_loss"])
    assert final["epoch"] == best["epoch"] and final["test_loss"] == pytest.approx(best["test_loss"])
    # the kept model is that epoch's: its held-out loss, recomputed from model.pt, is the best one
    model, channel_mean = load_model(job_dirs.model / "model.pt")
    from model.data import load_channel

    x_test, y_test = load_channel(memorising_channels["test"])
    with torch.no_grad():
        logits = model(to_model_input(x_test, channel_mean))
    loss = float(nn.functional.cross_entropy(logits, torch.as_tensor(y_test)))
    assert loss == pytest.approx(best["test_loss"], rel=0.05)
