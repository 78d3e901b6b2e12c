"""The metrics a script only prints reach the job's hook while it runs (debugger/hook/printed_metrics.py): the rules
see that the run meets its objective, and the status document keeps the metric's course over the epochs, as for a
metric saved with the debugger."""

from __future__ import annotations

import io
import sys

import pytest
import torch
from torch import nn

from contracts.objective import Objective
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from debugger import Hook
from debugger.hook.printed_metrics import reading_printed_metrics
from debugger.rules.run_objective import objective_met

DEFINITIONS = [
    {"Name": "validation:accuracy", "Regex": r"val_acc=([0-9.]+)"},
    {"Name": "validation:loss", "Regex": r"val_loss=([0-9.eE+-]+|nan)"},
]


def new_hook(tmp_path) -> Hook:
    return Hook.from_configs(hook_config={}, rule_configs=[], out_dir=tmp_path, job_name="printed")


def watched_training(hook: Hook):
    """A function that runs ``count`` training steps of a small model ``hook`` watches."""
    torch.manual_seed(0)
    model = nn.Linear(6, 3)
    hook.register_module(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(count: int) -> None:
        for _ in range(count):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(torch.randn(8, 6)), torch.randint(0, 3, (8,))).backward()
            optimizer.step()

    return train


def test_the_values_a_script_prints_are_its_metrics_course_in_the_status_document(tmp_path):
    hook = new_hook(tmp_path)
    train = watched_training(hook)
    with reading_printed_metrics(DEFINITIONS):
        for epoch, (accuracy, loss) in enumerate([(0.41, 1.9), (0.93, 0.4), (0.77, float("nan"))]):
            train(2)
            print(f"epoch={epoch} val_acc={accuracy} val_loss={loss}")
    hook.close()
    document = RuleStatusDocument.from_json((tmp_path / RULE_STATUS_FILE).read_text())
    assert document.metrics["validation:accuracy"].values == pytest.approx([0.41, 0.93, 0.77])
    assert document.metrics["validation:accuracy"].step == 5  # the last completed step when it was printed
    assert document.metrics["validation:loss"].values == pytest.approx([1.9, 0.4])  # as SageMaker: finite values only


def test_the_rules_see_a_printed_metric_that_meets_the_objective(tmp_path):
    """What keeps LossNotDecreasing (and the other rules that judge progress) from stopping a converged run."""
    hook = new_hook(tmp_path)
    objective = Objective.from_json({"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9}, "o")
    assert objective_met(hook.trial, objective) == (False, None)
    with reading_printed_metrics(DEFINITIONS):
        print("epoch=4 val_acc=0.93", file=sys.stderr)  # logging's default stream
    assert objective_met(hook.trial, objective) == (True, pytest.approx(0.93))
    hook.close()


def test_a_line_written_in_pieces_is_read_once_whole_and_the_last_line_without_newline_too(tmp_path):
    hook = new_hook(tmp_path)
    with reading_printed_metrics(DEFINITIONS):
        for piece in ("epoch=0 val", "_acc=0.", "5\nepoch=1 ", "val_acc=0.625"):
            sys.stdout.write(piece)
    assert hook.metrics["validation:accuracy"].values == pytest.approx([0.5, 0.625])
    hook.close()


def test_a_metric_the_script_also_saves_is_counted_once_from_what_it_saves(tmp_path):
    hook = new_hook(tmp_path)
    with reading_printed_metrics(DEFINITIONS):
        print("epoch=0 val_acc=0.5")  # printed before it is saved: read, then replaced by the saved course
        hook.save_scalar("validation:accuracy", 0.5)
        for accuracy in (0.7, 0.8):
            hook.save_scalar("validation:accuracy", accuracy)
            print(f"val_acc={accuracy}")
    assert hook.metrics["validation:accuracy"].values == pytest.approx([0.5, 0.7, 0.8])
    hook.close()


def test_the_scripts_output_is_unchanged_and_the_streams_are_given_back(tmp_path, monkeypatch):
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stdout", captured)
    hook = new_hook(tmp_path)
    with reading_printed_metrics(DEFINITIONS):
        assert sys.stdout is not captured and sys.stdout.getvalue() == ""  # every other attribute is the stream's
        print("epoch=0 val_acc=0.5", flush=True)
    assert sys.stdout is captured and captured.getvalue() == "epoch=0 val_acc=0.5\n"
    with reading_printed_metrics([]):
        assert sys.stdout is captured  # no definitions: nothing is read
    hook.close()
