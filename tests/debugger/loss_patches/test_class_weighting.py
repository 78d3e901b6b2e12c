"""The debugger corrects a script's training loss for class frequencies when the workflow asks
(remediation_class_weighting "balanced" or "logit_adjusted"): a plain PyTorch script, run by the job launcher as
SageMaker's script mode runs it, learns a class it sees 1 time in 50, and its evaluation loss stays the plain one."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from contracts.job import CLASS_WEIGHTING_HYPERPARAMETER, EXIT_BAD_INPUT, EXIT_SUCCESS
from tests.debugger.hook.launched_scripts import launch
from tests.debugger.hook.launched_scripts import printed as printed_line

pytestmark = pytest.mark.training

#: Two overlapping Gaussian classes in two dimensions; class 1 is 10 of 500 training samples and half the held-out
#: ones. The script knows nothing of weighting and prints what a user would look at.
SCRIPT = """
import torch
from torch import nn

torch.manual_seed(0)
def draw(common, rare):
    x = torch.cat([torch.randn(common, 2), torch.randn(rare, 2) + torch.tensor([1.5, 1.5])])
    y = torch.cat([torch.zeros(common, dtype=torch.long), torch.ones(rare, dtype=torch.long)])
    return x, y
x, y = draw(490, 10)
x_held, y_held = draw(200, 200)
model = nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(30):
    for batch in torch.randperm(len(y)).split(50):
        optimizer.zero_grad()
        loss_fn(model(x[batch]), y[batch]).backward()
        optimizer.step()
with torch.no_grad():
    scores = model(x_held)
    recall = (scores.argmax(1)[y_held == 1] == 1).float().mean().item()
    plain = -torch.log_softmax(scores, 1)[torch.arange(len(y_held)), y_held].mean().item()
    print(f"rare_recall={recall:.3f} eval_loss={loss_fn(scores, y_held).item():.6f} plain_loss={plain:.6f}")
"""


def run(tmp_path: Path, name: str, *extra: str) -> subprocess.CompletedProcess:
    return launch(tmp_path, name, SCRIPT, *extra)


def printed(process: subprocess.CompletedProcess) -> dict[str, float]:
    return printed_line(process, "rare_recall")


ANNOUNCED = {
    "balanced": "the training loss (cross-entropy) is weighted by class",
    "logit_adjusted": "the training loss (cross-entropy) is logit-adjusted",
}


@pytest.mark.parametrize("weighting", ["balanced", "logit_adjusted"])
def test_a_rare_class_is_learnt_when_the_debugger_corrects_the_training_loss(tmp_path, weighting):
    plain = run(tmp_path, "plain")
    corrected = run(tmp_path, "corrected", f"--{CLASS_WEIGHTING_HYPERPARAMETER}", weighting)
    assert plain.returncode == corrected.returncode == EXIT_SUCCESS, plain.stderr + corrected.stderr
    assert printed(plain)["rare_recall"] < 0.2  # a class seen 1 time in 50 is hardly ever predicted
    assert printed(corrected)["rare_recall"] > 0.7
    assert f"{ANNOUNCED[weighting]}" in corrected.stderr
    assert f"debugger_class_weighting = {weighting})" in corrected.stderr
    assert "class weighting" not in plain.stderr


@pytest.mark.parametrize("weighting", ["balanced", "logit_adjusted"])
def test_an_evaluation_without_gradients_keeps_the_plain_loss(tmp_path, weighting):
    corrected = printed(run(tmp_path, "corrected", f"--{CLASS_WEIGHTING_HYPERPARAMETER}", weighting))
    assert corrected["eval_loss"] == pytest.approx(corrected["plain_loss"], rel=1e-5)


def test_a_class_weighting_the_debugger_does_not_know_fails_the_job_naming_it(tmp_path):
    process = run(tmp_path, "job", f"--{CLASS_WEIGHTING_HYPERPARAMETER}", "inverse")
    assert process.returncode == EXIT_BAD_INPUT
    failure = (tmp_path / "job" / "failure").read_text()
    assert failure.startswith(
        f"InvalidClassWeighting: {CLASS_WEIGHTING_HYPERPARAMETER} must be 'balanced' or 'logit_adjusted' (got 'inverse')"
    )


def test_the_logit_adjustment_adds_each_class_s_log_share_of_the_labels_seen_so_far_along_the_class_dimension():
    import torch

    from debugger.loss_patches.class_weighting import ClassCounts

    counts = ClassCounts()
    scores = torch.zeros(4, 3, 2)  # N x C x L: a sequence model's scores
    labels = torch.tensor([[0, 0], [0, 0], [0, 1], [0, -100]])  # 6 of class 0, 1 of class 1, none of 2, one ignored
    adjusted = counts.adjusted(scores, labels)
    # class 2 not seen yet counts as one sample: shares 6/8, 1/8, 1/8
    assert adjusted[0, :, 0].tolist() == pytest.approx([math.log(6 / 8), math.log(1 / 8), math.log(1 / 8)])
    assert torch.equal(adjusted[:, :, 0], adjusted[:, :, 1])
    counts.adjusted(scores, torch.tensor([[2, 2], [2, 2], [2, 2], [2, 2]]))  # the counts go on: 6, 1, 8
    again = counts.adjusted(torch.zeros(1, 3), torch.tensor([1]))  # 6, 2, 8
    assert again[0].tolist() == pytest.approx([math.log(6 / 16), math.log(2 / 16), math.log(8 / 16)])
