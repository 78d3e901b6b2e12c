"""The debugger weights a script's training loss by class when the workflow asks (remediation_class_weighting
"balanced"): a plain PyTorch script, run by the job launcher as SageMaker's script mode runs it, learns a class it
sees 1 time in 50, and its evaluation loss stays the plain one."""

from __future__ import annotations

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


def test_a_rare_class_is_learnt_when_the_debugger_weights_the_training_loss(tmp_path):
    plain = run(tmp_path, "plain")
    weighted = run(tmp_path, "weighted", f"--{CLASS_WEIGHTING_HYPERPARAMETER}", "balanced")
    assert plain.returncode == weighted.returncode == EXIT_SUCCESS, plain.stderr + weighted.stderr
    assert printed(plain)["rare_recall"] < 0.2  # a class seen 1 time in 50 is hardly ever predicted
    assert printed(weighted)["rare_recall"] > 0.7
    assert "the training loss (cross-entropy) is weighted by class" in weighted.stderr
    assert "weighted by class" not in plain.stderr


def test_an_evaluation_without_gradients_keeps_the_plain_loss(tmp_path):
    weighted = printed(run(tmp_path, "weighted", f"--{CLASS_WEIGHTING_HYPERPARAMETER}", "balanced"))
    assert weighted["eval_loss"] == pytest.approx(weighted["plain_loss"], rel=1e-5)


def test_a_class_weighting_the_debugger_does_not_know_fails_the_job_naming_it(tmp_path):
    process = run(tmp_path, "job", f"--{CLASS_WEIGHTING_HYPERPARAMETER}", "inverse")
    assert process.returncode == EXIT_BAD_INPUT
    failure = (tmp_path / "job" / "failure").read_text()
    assert failure.startswith(f"InvalidClassWeighting: {CLASS_WEIGHTING_HYPERPARAMETER} must be 'balanced' (got 'inverse')")
