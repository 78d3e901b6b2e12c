"""The debugger trains a script on the generalized cross-entropy when the workflow asks (remediation_robust_loss
"generalized_cross_entropy"): a plain PyTorch script whose training labels are 60% wrong, run by the job launcher as
SageMaker's script mode runs it, scores higher held out, and its evaluation loss stays the plain one. The loss itself
is checked against its formula, with every argument of ``F.cross_entropy`` a script may pass."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from contracts.job import EXIT_BAD_INPUT, EXIT_SUCCESS, ROBUST_LOSS_HYPERPARAMETER
from debugger.loss_patches.class_weighting import weighting_the_training_loss
from debugger.loss_patches.robust_loss import Q, generalized_cross_entropy, training_on_a_robust_loss
from tests.debugger.hook.launched_scripts import launch
from tests.debugger.hook.launched_scripts import printed as printed_line

#: scikit-learn's bundled digits, 60% of the 1,400 training labels drawn at random, a one-layer MLP under Adam: the
#: script knows nothing of robust losses and prints what a user would look at.
SCRIPT = """
import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

torch.manual_seed(0)
rng = np.random.default_rng(0)
digits = load_digits()
x = torch.tensor(digits.data, dtype=torch.float32) / 16
y = torch.tensor(digits.target)
order = torch.tensor(rng.permutation(len(y)))
x, y = x[order], y[order]
x_train, y_train, x_held, y_held = x[:1400], y[:1400].clone(), x[1400:], y[1400:]
wrong = torch.tensor(rng.choice(1400, 840, replace=False))
y_train[wrong] = torch.tensor(rng.integers(0, 10, 840))
model = nn.Sequential(nn.Linear(64, 128), nn.ELU(), nn.Linear(128, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=0.002)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(30):
    for batch in torch.randperm(len(y_train)).split(32):
        optimizer.zero_grad()
        loss_fn(model(x_train[batch]), y_train[batch]).backward()
        optimizer.step()
with torch.no_grad():
    scores = model(x_held)
    accuracy = (scores.argmax(1) == y_held).float().mean().item()
    plain = -torch.log_softmax(scores, 1)[torch.arange(len(y_held)), y_held].mean().item()
    print(f"held_out_accuracy={accuracy:.3f} eval_loss={loss_fn(scores, y_held).item():.6f} plain_loss={plain:.6f}")
"""


def run(tmp_path: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    return launch(tmp_path, name, SCRIPT, *extra)


def printed(process: subprocess.CompletedProcess) -> dict[str, float]:
    return printed_line(process, "held_out_accuracy")


@pytest.mark.training
def test_a_script_on_wrong_labels_scores_higher_on_the_debuggers_robust_loss(tmp_path):
    plain = run(tmp_path, "plain")
    robust = run(tmp_path, "robust", f"--{ROBUST_LOSS_HYPERPARAMETER}", "generalized_cross_entropy")
    assert plain.returncode == robust.returncode == EXIT_SUCCESS, plain.stderr + robust.stderr
    # measured: 0.819 plain, 0.929 on the robust loss (torch 2.13 CPU)
    assert printed(plain)["held_out_accuracy"] < 0.87
    assert printed(robust)["held_out_accuracy"] > printed(plain)["held_out_accuracy"] + 0.05
    assert "the training loss is the generalized cross-entropy (q=0.7)" in robust.stderr
    assert "generalized cross-entropy" not in plain.stderr
    assert printed(robust)["eval_loss"] == pytest.approx(printed(robust)["plain_loss"], rel=1e-5)


@pytest.mark.training
def test_a_robust_loss_the_debugger_does_not_know_fails_the_job_naming_it(tmp_path):
    process = run(tmp_path, "job", f"--{ROBUST_LOSS_HYPERPARAMETER}", "focal")
    assert process.returncode == EXIT_BAD_INPUT
    failure = (tmp_path / "job" / "failure").read_text()
    assert failure.startswith(
        f"InvalidRobustLoss: {ROBUST_LOSS_HYPERPARAMETER} must be 'generalized_cross_entropy' (got 'focal')"
    )


def scores_and_labels():
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(6, 4, generator=generator, requires_grad=True)
    return scores, torch.tensor([0, 3, 1, 1, 2, 0])


def by_hand(scores, labels):
    label_probability = torch.softmax(scores, 1)[torch.arange(len(labels)), labels]
    return (1 - label_probability**Q) / Q


def test_the_loss_is_one_minus_the_labels_probability_to_the_q_over_q():
    scores, labels = scores_and_labels()
    expected = by_hand(scores, labels)
    assert torch.allclose(generalized_cross_entropy(scores, labels, reduction="none"), expected)
    assert torch.allclose(generalized_cross_entropy(scores, labels, reduction="sum"), expected.sum())
    assert torch.allclose(generalized_cross_entropy(scores, labels), expected.mean())
    # q -> 0 is the cross-entropy (in double precision: 1 - p ** q for a tiny q is lost in single)
    scores = scores.double()
    assert torch.allclose(generalized_cross_entropy(scores, labels, q=1e-6), F.cross_entropy(scores, labels), atol=1e-4)


def test_the_gradient_is_the_cross_entropys_times_p_to_the_q_over_its_mean():
    """A wrong label (one the model finds unlikely) still pulls less than a right one, but the call's step is the
    cross-entropy's size while the model is at chance, not a fifth of it (SGD trained at chance for epochs)."""
    scores, labels = scores_and_labels()
    generalized_cross_entropy(scores, labels).backward()
    robust = scores.grad.clone()
    scores.grad = None
    F.cross_entropy(scores, labels, reduction="none").sum().backward()
    per_sample = scores.grad.clone()
    pull = torch.softmax(scores, 1)[torch.arange(len(labels)), labels].detach() ** Q
    expected = per_sample * (pull / pull.mean())[:, None] / len(labels)
    assert torch.allclose(robust, expected, atol=1e-6)
    at_chance = torch.zeros(5, 10, requires_grad=True)  # every class equally likely: the cross-entropy's gradient
    generalized_cross_entropy(at_chance, torch.arange(5)).backward()
    chance_grad = at_chance.grad.clone()
    at_chance.grad = None
    F.cross_entropy(at_chance, torch.arange(5)).backward()
    assert torch.allclose(chance_grad, at_chance.grad, atol=1e-6)


def test_weights_and_ignored_labels_reduce_as_the_cross_entropy_reduces():
    scores, labels = scores_and_labels()
    weight = torch.tensor([1.0, 2.0, 3.0, 0.5])
    ignored = labels.clone()
    ignored[2] = -100
    per_sample = by_hand(scores, labels) * weight[labels]
    kept = torch.ones(6, dtype=torch.bool)
    kept[2] = False
    expected = per_sample[kept].sum() / weight[labels][kept].sum()  # PyTorch's weighted mean
    assert torch.allclose(generalized_cross_entropy(scores, ignored, weight=weight), expected)
    assert generalized_cross_entropy(scores, ignored, reduction="none")[2] == 0


def test_images_score_per_pixel():
    generator = torch.Generator().manual_seed(1)
    scores = torch.randn(2, 3, 4, 4, generator=generator, requires_grad=True)
    labels = torch.randint(0, 3, (2, 4, 4), generator=generator)
    flat = generalized_cross_entropy(scores.permute(0, 2, 3, 1).reshape(-1, 3), labels.reshape(-1), reduction="none")
    assert torch.allclose(generalized_cross_entropy(scores, labels, reduction="none").reshape(-1), flat)


def test_only_training_calls_change():
    scores, labels = scores_and_labels()
    with training_on_a_robust_loss("generalized_cross_entropy"):
        training = F.cross_entropy(scores, labels)
        as_module = torch.nn.CrossEntropyLoss(reduction="sum")(scores, labels)
        with torch.no_grad():
            evaluation = F.cross_entropy(scores, labels)
        smoothed = F.cross_entropy(scores, labels, label_smoothing=0.1)
        soft_targets = F.cross_entropy(scores, torch.softmax(torch.randn(6, 4), 1))
    assert torch.allclose(training, by_hand(scores, labels).mean())
    assert torch.allclose(as_module, by_hand(scores, labels).sum())
    assert torch.allclose(evaluation, F.cross_entropy(scores, labels))
    assert torch.allclose(smoothed, F.cross_entropy(scores, labels, label_smoothing=0.1))
    assert soft_targets.shape == ()
    assert torch.allclose(F.cross_entropy(scores, labels), F.cross_entropy(scores, labels))  # restored after
    assert F.cross_entropy.__module__ == "torch.nn.functional"


def test_with_class_weighting_the_robust_loss_is_weighted_by_class():
    scores, labels = scores_and_labels()  # class counts 2, 2, 1, 1: balanced weights 1.5, 1.5 for 0 and 1, 3 and 3
    with training_on_a_robust_loss("generalized_cross_entropy"), weighting_the_training_loss("balanced"):
        both = F.cross_entropy(scores, labels)
    weight = torch.tensor([1.5, 1.5, 3.0, 3.0])[labels]
    assert torch.allclose(both, (by_hand(scores, labels) * weight).sum() / weight.sum())


def test_anything_else_leaves_the_loss_as_the_script_wrote_it():
    with training_on_a_robust_loss(None), training_on_a_robust_loss("off"):
        assert F.cross_entropy.__module__ == "torch.nn.functional"
