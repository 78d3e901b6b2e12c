"""The evidence the hook writes for the planner, on small real torch models: the optimizer the script steps (named
although smdebug's scripts never register it) and its rates, where the loss and the gradient norm peaked, and how
many checkpoint files the job has left."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from contracts.job import CHECKPOINT_DIR_ENV
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from debugger import Hook, StopTrainingRequested
from debugger.core.modes import ModeKeys

STOP = '[{"name":"StopTraining"}]'


def rule(name: str, **parameters: str) -> dict:
    return {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **parameters}}


def model_and_data():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    generator = torch.Generator().manual_seed(1)
    data = [(torch.randn(32, 6, generator=generator), torch.randint(0, 4, (32,), generator=generator)) for _ in range(8)]
    return model, data


def read_evidence(directory):
    return RuleStatusDocument.from_json((directory / RULE_STATUS_FILE).read_text()).evidence


def hooked(out_dir, job_name, criterion=None, rules=None):
    """(hook, model, data, criterion): the hook watching the model and its loss, as an smdebug script registers them."""
    hook = Hook.from_configs(rule_configs=rules or [rule("LossNotDecreasing")], out_dir=out_dir, job_name=job_name)
    model, data = model_and_data()
    criterion = criterion or nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    return hook, model, data, criterion


def test_an_unregistered_adam_is_named_with_its_rates_and_the_peaks_carry_their_step_and_rate(tmp_path):
    hook, model, data, criterion = hooked(tmp_path, "adam")
    optimizer = torch.optim.Adam(
        [{"params": model[0].parameters(), "lr": 1e-3}, {"params": model[2].parameters(), "lr": 3e-4}]
    )
    losses, norms = [], []
    for step, (inputs, labels) in enumerate(data):
        for group in optimizer.param_groups:  # a schedule the script runs itself
            group["lr"] = group["lr"] * (50 if step == 3 else 1)
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        losses.append(float(loss.detach()))
        norms.append(hook.last_gradient_norm)
        optimizer.step()
    hook.close()

    evidence = read_evidence(tmp_path)
    assert evidence.optimizer == "Adam"
    assert evidence.learning_rates == pytest.approx([0.05, 0.015])  # the rates at the end, after the schedule
    peak_step = max(range(len(losses)), key=losses.__getitem__)
    assert evidence.loss_peak.step == peak_step and evidence.loss_peak.value == pytest.approx(losses[peak_step])
    grad_step = max(range(len(norms)), key=norms.__getitem__)
    assert evidence.gradient_norm_peak.step == grad_step
    assert evidence.gradient_norm_peak.value == pytest.approx(norms[grad_step])
    # the rate of the step where it peaked, as the hook read it then (group 0's)
    assert evidence.gradient_norm_peak.learning_rate == pytest.approx(1e-3 * (50 if grad_step >= 3 else 1))
    assert evidence.max_gradient_norm == evidence.gradient_norm_peak.value


def test_a_rule_that_stops_the_job_before_the_first_optimizer_step_still_names_the_optimizer(tmp_path):
    early_stop = [rule("VanishingGradient", threshold="1e3", action_json=STOP)]
    hook, model, data, criterion = hooked(tmp_path, "early", rules=early_stop)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    inputs, labels = data[0]
    with pytest.raises(StopTrainingRequested):
        criterion(model(inputs), labels).backward()  # the check at the end of backward stops it at step 0
        optimizer.step()
    hook.close()
    evidence = read_evidence(tmp_path)
    assert evidence.first_issue_step == 0
    assert (evidence.optimizer, evidence.learning_rates) == ("AdamW", [2e-3])


def test_the_checkpoint_files_the_job_left_are_counted(tmp_path, monkeypatch):
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    monkeypatch.setenv(CHECKPOINT_DIR_ENV, str(checkpoints))
    hook, model, data, criterion = hooked(tmp_path / "debug", "ckpt")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for inputs, labels in data[:2]:
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        optimizer.step()
    assert hook.write_status().evidence.checkpoint_files == 0  # a script that writes none
    torch.save(model.state_dict(), checkpoints / "checkpoint-0000.pt")
    (checkpoints / "epoch-1").mkdir()
    torch.save(model.state_dict(), checkpoints / "epoch-1" / "model.pt")
    hook.close()
    assert read_evidence(tmp_path / "debug").checkpoint_files == 2
    assert (read_evidence(tmp_path / "debug").optimizer, read_evidence(tmp_path / "debug").learning_rates) == (
        "SGD",
        [0.01],
    )


def test_a_job_without_a_checkpoint_directory_reports_none(tmp_path, monkeypatch):
    monkeypatch.delenv(CHECKPOINT_DIR_ENV, raising=False)
    monkeypatch.setenv("CHECKPOINT_CONFIG_FILE_PATH", str(tmp_path / "absent.json"))
    hook = Hook.from_configs(rule_configs=[rule("LossNotDecreasing")], out_dir=tmp_path, job_name="none")
    assert hook.close().evidence.checkpoint_files is None


def test_the_training_loss_course_is_reported_in_windows_and_evaluation_losses_stay_out(tmp_path):
    """Issue 21: the planner reads the loss's course over the whole job. Every training step's loss is in one window
    (the means are the steps' own), however many steps; the evaluation passes between epochs are not."""
    hook, model, data, criterion = hooked(tmp_path, "course")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    training_losses = []
    for _ in range(5):
        hook.set_mode(ModeKeys.TRAIN)
        for inputs, labels in data:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            training_losses.append(float(loss.detach()))
            optimizer.step()
        hook.set_mode(ModeKeys.EVAL)
        with torch.no_grad():
            for inputs, labels in data[:2]:
                criterion(model(inputs) * 100, labels)  # evaluation losses far above the training ones
    hook.close()

    windows = read_evidence(tmp_path).loss_windows
    assert sum(window.count for window in windows) == len(training_losses) == 40
    position = 0
    for window in windows:
        assert window.mean == pytest.approx(sum(training_losses[position : position + window.count]) / window.count)
        position += window.count


def test_the_training_labels_are_counted_by_class_with_how_often_the_model_matched_them(tmp_path):
    """Issue 21: the job counts the class-index labels its loss module trains on, and per loss window how often the
    model's top class matched them before the update; evaluation passes and labels outside the classes
    (CrossEntropyLoss's ignore_index) are not counted."""
    hook, model, data, criterion = hooked(tmp_path, "labels")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    counts, matched = torch.zeros(4, dtype=torch.int64), []
    for _ in range(3):
        hook.set_mode(ModeKeys.TRAIN)
        for inputs, labels in data:
            labels = labels.clone()
            labels[0] = -100  # ignored by the loss: not a class
            optimizer.zero_grad()
            scores = model(inputs)
            kept = labels >= 0
            counts += torch.bincount(labels[kept], minlength=4)
            matched.append(float((scores.argmax(1)[kept] == labels[kept]).float().mean()))
            criterion(scores, labels).backward()
            optimizer.step()
        hook.set_mode(ModeKeys.EVAL)
        with torch.no_grad():
            criterion(model(data[0][0]), torch.zeros(32, dtype=torch.int64))  # all class 0: would tilt the counts
    hook.close()

    evidence = read_evidence(tmp_path)
    assert evidence.label_counts == counts.tolist() and sum(evidence.label_counts) == 3 * 8 * 31
    position = 0
    for window in evidence.loss_windows:
        assert window.agreement_count == window.count
        assert window.agreement == pytest.approx(sum(matched[position : position + window.count]) / window.count)
        position += window.count


def test_the_dropout_active_while_the_model_trains_on_its_labels_is_reported(tmp_path):
    """The largest probability of a dropout module in training mode on a training step: 0.5 here, though the script
    turned that module down to 0.2 later and an evaluation pass (eval mode) ran between; a model without dropout
    reports none."""
    hook = Hook.from_configs(rule_configs=[rule("LossNotDecreasing")], out_dir=tmp_path / "dropout", job_name="dropout")
    torch.manual_seed(0)
    thin = nn.Dropout(0.5)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), thin, nn.Linear(16, 4), nn.AlphaDropout(0.0))
    criterion = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for probability in (0.5, 0.2):
        thin.p = probability
        hook.set_mode(ModeKeys.TRAIN)
        model.train()
        for _ in range(3):
            optimizer.zero_grad()
            criterion(model(torch.randn(32, 6)), torch.randint(0, 4, (32,))).backward()
            optimizer.step()
        hook.set_mode(ModeKeys.EVAL)
        model.eval()
        with torch.no_grad():
            criterion(model(torch.randn(32, 6)), torch.randint(0, 4, (32,)))
    hook.close()
    assert read_evidence(tmp_path / "dropout").training_dropout == 0.5

    hook, model, data, criterion = hooked(tmp_path / "plain", "plain")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    hook.set_mode(ModeKeys.TRAIN)
    for inputs, labels in data[:3]:
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        optimizer.step()
    hook.close()
    evidence = read_evidence(tmp_path / "plain")
    assert evidence.label_counts and evidence.training_dropout is None


def train_digits_epochs(out_dir, epochs, augment):
    """A few epochs of a small MLP over scikit-learn's digits from a shuffling DataLoader, with an evaluation pass
    after each; ``augment`` adds Gaussian noise to each training batch as a loader's transform would."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    inputs = torch.tensor(digits.data[:600] / 16.0, dtype=torch.float32)
    labels = torch.tensor(digits.target[:600])
    hook = Hook.from_configs(rule_configs=[rule("LossNotDecreasing")], out_dir=out_dir, job_name=out_dir.name)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    criterion = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, labels), batch_size=32, shuffle=True)
    for _ in range(epochs):
        hook.set_mode(ModeKeys.TRAIN)
        model.train()
        for batch, batch_labels in loader:
            if augment:
                batch = batch + 0.3 * torch.randn_like(batch)
            optimizer.zero_grad()
            criterion(model(batch), batch_labels).backward()
            optimizer.step()
        hook.set_mode(ModeKeys.EVAL)
        model.eval()
        with torch.no_grad():
            model(inputs[:100])
    hook.close()
    return read_evidence(out_dir)


def test_the_share_of_training_inputs_seen_again_tells_unchanged_inputs_from_augmented_ones(tmp_path):
    """Four epochs over the same 600 digits repeat three quarters of the rows (every row after the first epoch;
    the evaluation pass's rows are not training inputs); with noise added to each batch, none comes back."""
    assert train_digits_epochs(tmp_path / "plain", 4, augment=False).training_inputs_repeated == 0.75
    assert train_digits_epochs(tmp_path / "augmented", 4, augment=True).training_inputs_repeated == 0.0


def test_a_regression_loss_counts_no_labels(tmp_path):
    """MSELoss takes real-valued targets: nothing about classes to count, and no agreement is claimed."""
    hook, model, data, criterion = hooked(tmp_path, "regression", nn.MSELoss())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    hook.set_mode(ModeKeys.TRAIN)
    for inputs, _ in data:
        optimizer.zero_grad()
        criterion(model(inputs), torch.zeros(32, 4)).backward()
        optimizer.step()
    hook.close()
    evidence = read_evidence(tmp_path)
    assert evidence.label_counts is None
    assert all(window.agreement is None and window.agreement_count == 0 for window in evidence.loss_windows)


def test_a_model_of_more_classes_than_counted_reports_no_label_counts_but_its_agreement(tmp_path):
    """1,000 classes: counts cut at the tally's cap would misstate the balance, so none are reported; how often the
    model's top class matched its labels still is."""
    hook = Hook.from_configs(rule_configs=[rule("LossNotDecreasing")], out_dir=tmp_path, job_name="many")
    torch.manual_seed(0)
    model = nn.Linear(6, 1000)
    criterion = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    hook.set_mode(ModeKeys.TRAIN)
    for _ in range(4):
        optimizer.zero_grad()
        criterion(model(torch.randn(32, 6)), torch.randint(0, 1000, (32,))).backward()
        optimizer.step()
    hook.close()
    evidence = read_evidence(tmp_path)
    assert evidence.label_counts is None
    assert all(window.agreement is not None for window in evidence.loss_windows)


def test_a_regressions_target_and_output_scales_are_measured_at_its_first_training_step(tmp_path):
    """Targets a thousand times a unit: the root mean square of the targets and of the model's first outputs, as the
    loss compared them at step 0 (the planner divides one by the other: docs/decisions/166)."""
    hook, model, data, criterion = hooked(tmp_path, "target-scale", nn.MSELoss())
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    hook.set_mode(ModeKeys.TRAIN)
    targets = torch.full((32, 4), 1000.0)
    first_outputs = None
    for inputs, _ in data:
        optimizer.zero_grad()
        outputs = model(inputs)
        first_outputs = outputs.detach() if first_outputs is None else first_outputs
        criterion(outputs, targets).backward()
        optimizer.step()
    hook.close()
    evidence = read_evidence(tmp_path)
    assert evidence.target_rms == pytest.approx(1000.0)
    assert evidence.output_rms == pytest.approx(float(first_outputs.pow(2).mean().sqrt()), rel=1e-5)
    assert evidence.target_loss == "MSELoss"  # the loss that compared them: its gradient grows with the targets


def test_the_gradient_norms_course_and_what_diverged_are_reported(tmp_path):
    """A rate of 50 on the small MLP: the gradient norm's course is folded into windows as the loss's, with their
    spread and peak, and the job reads from both whether they diverged (contracts.divergence)."""
    hook, model, data, criterion = hooked(tmp_path, "diverged", rules=[rule("VanishingGradient")])
    optimizer = torch.optim.SGD(model.parameters(), lr=50.0)
    norms = []
    hook.set_mode(ModeKeys.TRAIN)
    for _ in range(3):
        for inputs, labels in data:
            optimizer.zero_grad()
            criterion(model(inputs), labels).backward()
            norms.append(hook.last_gradient_norm)
            optimizer.step()
    hook.close()
    evidence = read_evidence(tmp_path)
    windows = evidence.gradient_norm_windows
    finite = [norm for norm in norms if math.isfinite(norm)]  # the rate blows it up to inf: those are not folded
    assert sum(window.count for window in windows) == len(finite) < len(norms) == 24
    assert max(window.peak for window in windows) == pytest.approx(max(finite), rel=1e-6)
    assert evidence.loss_divergence is not None and evidence.loss_divergence.series == "loss"
    assert evidence.loss_divergence.early == pytest.approx(evidence.initial_loss)
