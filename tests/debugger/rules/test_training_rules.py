"""The training-curve built-in rules (ClassImbalance, StalledTrainingRule) at and around their documented
thresholds, on constructed series and on small real torch jobs; and every rule able to fire at every save
interval (LossNotDecreasing, WeightUpdateRatio)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from rule_trials import assert_refused, make
from torch import nn

from contracts import ContractError
from contracts.job import (
    ENTRY_POINT_HYPERPARAMETER,
    EXIT_RULE_STOP,
    HOOK_CONFIG_HYPERPARAMETER,
    RULE_CONFIGS_HYPERPARAMETER,
    STOP_TRAINING_FAILURE,
)
from contracts.rule_status import (
    ISSUES_FOUND,
    LABEL_OUT_OF_RANGE,
    NO_ISSUES_FOUND,
    RULE_STATUS_FILE,
    RuleStatusDocument,
)
from debugger import Hook
from debugger.rules import BUILTIN_RULES, builtin_rule_parameters, training_rules
from debugger.rules.training_rules import ClassImbalance, StalledTrainingRule
from debugger.trial import LiveTrial

REPO_ROOT = Path(__file__).resolve().parents[3]
STOP = '[{"name":"StopTraining"}]'


def rule(name: str, **parameters: str) -> dict:
    return {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **parameters}}


def read_status(directory: Path) -> RuleStatusDocument:
    return RuleStatusDocument.from_json((directory / RULE_STATUS_FILE).read_text())


# --------------------------------------------------------------------------- ClassImbalance on constructed steps


def labelled_trial(tmp_path: Path, steps: list[tuple[np.ndarray, np.ndarray | None]]) -> LiveTrial:
    """A trial whose step i holds ``labels`` and ``predictions`` as the hook shows them to the rules."""
    trial = LiveTrial(tmp_path, keep_saved_steps=len(steps))
    for step, (labels, predictions) in enumerate(steps):
        tensors = {"labels": np.asarray(labels)}
        if predictions is not None:
            tensors["predictions"] = np.asarray(predictions)
        trial.add_saved_step(step, tensors, {name: ["default"] for name in tensors})
    return trial


def run(rule, steps: int) -> list[bool]:
    return [rule.invoke_at_step(step) for step in range(steps)]


@pytest.mark.parametrize(("majority", "fires"), [(505, True), (500, False)])
def test_class_imbalance_fires_above_threshold_imbalance(tmp_path, majority, fires):
    # 50 samples of class 1: 505 of class 0 is 10.1x (> the default 10), 500 is exactly 10x (quiet)
    labels = np.array([0] * majority + [1] * 50)
    trial = labelled_trial(tmp_path, [(labels[:300], labels[:300]), (labels[300:], labels[300:])])
    found = make("ClassImbalance", trial)
    assert run(found, 2) == [False, fires]
    if fires:
        assert found.finding.kind == "imbalance" and found.finding.value == pytest.approx(10.1)
        assert "class 0 has 505 of 555 labels, class 1 50" in found.finding.message


@pytest.mark.parametrize(("wrong", "fires"), [(36, True), (35, False)])
def test_class_imbalance_fires_above_threshold_misprediction(tmp_path, wrong, fires):
    # class 2 has 50 samples, the others 120 (imbalance 2.4, below the default 10; 50 is at most half its fair
    # share of 106); 36 of them predicted as class 0 is 0.72 (> the default 0.7), the other classes all right
    labels = np.concatenate([np.repeat([0, 1], 120), np.full(50, 2), np.repeat([3, 4], 120)])
    predictions = labels.copy()
    predictions[240 : 240 + wrong] = 0
    found = make("ClassImbalance", labelled_trial(tmp_path, [(labels, predictions)]))
    assert run(found, 1) == [fires]
    if fires:
        assert found.finding.kind == "misprediction"
        assert found.finding.value == pytest.approx(0.72)
        assert "72.0% of class 2's 50 samples" in found.finding.message


def test_class_imbalance_does_not_take_a_class_learned_later_for_a_rare_one(tmp_path):
    # balanced classes, class 2 not learned yet (all 100 predicted as class 0): no class is underrepresented
    labels = np.repeat([0, 1, 2, 3, 4], 100)
    predictions = np.where(labels == 2, 0, labels)
    assert run(make("ClassImbalance", labelled_trial(tmp_path, [(labels, predictions)])), 1) == [False]
    # a rare class an untrained model gets wrong, as it gets every class wrong: not a class it ignores
    rare = np.concatenate([np.repeat([0, 1, 3, 4], 120), np.full(50, 2)])
    untrained = (rare + 1) % 5
    found = make("ClassImbalance", labelled_trial(tmp_path / "untrained", [(rare, untrained)]))
    assert run(found, 1) == [False] and "so were the other classes (100.0%)" in found.latest_note


def test_class_imbalance_waits_for_samples_labels(tmp_path):
    labels = np.array([0] * 480 + [1] * 19)  # 499 labels, 25x imbalanced
    trial = labelled_trial(tmp_path, [(labels, None), (np.array([0]), None)])
    found = make("ClassImbalance", trial)
    assert run(found, 2) == [False, True]  # the 500th label arrives at step 1
    assert make("ClassImbalance", trial, samples="501").invoke_at_step(0) is False


def test_class_imbalance_argmax_of_scores_and_label_out_of_range(tmp_path):
    scores = np.eye(4)[[0, 1, 2, 3] * 125]  # 500 samples, 4 classes, predicted right
    labels = np.array([0, 1, 2, 3] * 125)
    quiet = make("ClassImbalance", labelled_trial(tmp_path, [(labels, scores)]), argmax="True")
    assert run(quiet, 1) == [False]
    with pytest.raises(ValueError, match='argmax parameter to "True"'):
        make("ClassImbalance", labelled_trial(tmp_path, [(labels, scores)])).invoke_at_step(0)

    labels[7] = 4  # a class the 4 prediction columns do not have: fires at once, before `samples` labels
    found = make("ClassImbalance", labelled_trial(tmp_path, [(labels[:20], scores[:20])]), argmax="True")
    assert run(found, 1) == [True]
    assert found.finding.kind == LABEL_OUT_OF_RANGE and found.finding.value == 4
    assert "outside the 4 classes the predictions cover (0-3)" in found.finding.message
    negative = make("ClassImbalance", labelled_trial(tmp_path, [(np.array([0, -1, 1]), None)]))
    assert run(negative, 1) == [True] and negative.finding.kind == LABEL_OUT_OF_RANGE


def test_class_imbalance_parameters_are_checked(tmp_path):
    typed = builtin_rule_parameters("ClassImbalance", {}, "rule")
    assert (typed["threshold_imbalance"], typed["threshold_misprediction"], typed["samples"], typed["argmax"]) == (
        10.0,
        0.7,
        500,
        False,
    )
    assert typed["labels_regex"].pattern == ".*labels" and typed["predictions_regex"].pattern == ".*predictions"
    for parameter, value, hint in (
        ("threshold_misprediction", "70", "between 0 and 1"),
        ("samples", "0", ">= 1"),
        ("argmax", "yes", '"True" or "False"'),
        ("labels_regex", "labels(", "regular expression"),
    ):
        assert_refused(tmp_path, "ClassImbalance", parameter, value, hint)


# --------------------------------------------------------------------------- ClassImbalance in a real job


def classifier_job(tmp_path: Path, label_of, steps: int, save_interval: str, **parameters: str) -> RuleStatusDocument:
    """A small classifier whose script saves its labels and predictions (smdebug's names) every step."""
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": save_interval}},
        rule_configs=[rule("ClassImbalance", argmax="True", **parameters)],
        out_dir=tmp_path,
        job_name="classes",
    )
    torch.manual_seed(0)
    model, criterion = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(1)
    for step in range(steps):
        inputs = torch.randn(32, 6, generator=generator)
        labels = label_of(step, inputs)
        hook.save_tensor("labels", labels)  # before the forward pass: it belongs to the step that begins
        outputs = model(inputs)
        hook.save_tensor("predictions", outputs)
        optimizer.zero_grad()
        criterion(outputs, labels.clamp(0, 3)).backward()
        optimizer.step()
    return hook.close()


def test_a_job_whose_labels_are_out_of_range_reports_label_out_of_range(tmp_path):
    def labels(step, inputs):
        values = (inputs[:, 0] > 0).long() + 2 * (inputs[:, 1] > 0).long()
        if step == 6:
            values[5] = 9  # a label from a 10-class data set fed to a 4-class model
        return values

    document = classifier_job(tmp_path, labels, steps=10, save_interval="500")
    (status,) = document.rules
    assert status.RuleEvaluationStatus == ISSUES_FOUND
    assert (status.issue.kind, status.issue.step, status.issue.value, status.issue.tensor) == (LABEL_OUT_OF_RANGE, 6, 9.0, "labels")
    steps = sorted(path.name for path in (tmp_path / "steps").iterdir())
    assert steps == ["000000000000.npz"]  # seen at every step, saved at the save interval only


def test_a_job_with_a_rare_class_reports_imbalance_at_any_save_interval(tmp_path):
    def labels(step, inputs):
        values = torch.zeros(32, dtype=torch.long)
        values[0] = step % 2 + 1  # classes 1 and 2 in 1 of 32 samples each: 31:0.5
        return values

    for interval in ("1", "500"):
        document = classifier_job(tmp_path / interval, labels, steps=20, save_interval=interval, samples="320")
        (status,) = document.rules
        assert (status.RuleEvaluationStatus, status.issue.kind, status.issue.step) == (ISSUES_FOUND, "imbalance", 9)


# --------------------------------------------------------------------------- StalledTrainingRule


def test_stalled_training_rule_clock(tmp_path):
    stalled = make("StalledTrainingRule", LiveTrial(tmp_path), threshold="2")
    assert stalled.threshold == 2.0 and not stalled.stop_training_on_fire
    start = stalled._last_progress
    assert stalled.check_stalled(now=start + 2.0) is False  # just at the threshold: quiet
    assert stalled.check_stalled(now=start + 2.01) is True
    assert stalled.finding.kind == "stalled" and "before the first step" in stalled.finding.message
    assert stalled.invoke_at_step(7) is False and stalled.last_step == 7
    assert stalled.check_stalled(now=stalled._last_progress + 1.0) is False
    # the hook notes a step as its check begins, then the rule sees the same step: a stall in between is not erased
    clock = StallClock()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training_rules, "time", clock)
        stalled.note_progress(8)
        clock.now += 3.0
        assert stalled.invoke_at_step(8) is False and stalled.check_stalled() is True
        assert stalled.invoke_at_step(9) is False and stalled.check_stalled() is False
    assert builtin_rule_parameters("StalledTrainingRule", {}, "r") == {
        "threshold": 1800.0,
        "stop_training_on_fire": False,
        "training_job_name_prefix": "",
    }
    with pytest.raises(ContractError) as raised:
        make("StalledTrainingRule", LiveTrial(tmp_path), threshold="0")
    assert raised.value.field == "rule.RuleParameters.threshold"
    prefixed = StalledTrainingRule(LiveTrial(tmp_path), stop_training_on_fire=True, training_job_name_prefix="resnet-")
    assert prefixed.stops("resnet-001") and not prefixed.stops("other-001")


def hung_loop(hook: Hook, hang_after: int, release, hung=None) -> None:
    """A few real steps, then a loop that waits (until ``release`` is set) as a deadlocked loader would; ``hung`` (an
    Event) is set once the last step is done, checks included."""
    torch.manual_seed(0)
    model, criterion = nn.Linear(4, 2), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(hang_after):
        optimizer.zero_grad()
        criterion(model(torch.randn(8, 4)), torch.randint(0, 2, (8,))).backward()
        optimizer.step()
    if hung is not None:
        hung.set()
    release.wait(timeout=300)


class StallClock:
    """The rule's monotonic clock, moved by the test: the stall happens when the test says so, however slowly the
    machine runs the steps before it (a real 0.5 s threshold fired before the first step on a loaded machine)."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


@pytest.mark.parametrize("stop", [False, True])
def test_stalled_training_rule_fires_from_the_watchdog_in_process(tmp_path, monkeypatch, stop):
    import threading

    monkeypatch.setenv("TRAINING_FAILURE_FILE", str(tmp_path / "failure"))
    clock = StallClock()
    monkeypatch.setattr(training_rules, "time", clock)

    parameters = {"threshold": "0.5", "stop_training_on_fire": str(stop)}
    hook = Hook.from_configs(
        rule_configs=[rule("StalledTrainingRule", **parameters), rule("ExplodingTensor")], out_dir=tmp_path, job_name="j"
    )
    exits = []
    release = threading.Event()
    hook._stall_watchdog.exit_process = lambda code: (exits.append(code), release.set())
    hung = threading.Event()

    def stall_after_the_third_step() -> None:
        # the clock moves once the loop hangs, never while step 2's check still runs: a stop requested then would
        # end that step, not the hung loop
        hung.wait(timeout=300)
        clock.now += 1.0  # the loop hangs: a second passes with no step (threshold 0.5 s)
        if not stop:
            # without a stop nothing ends the hung loop: release it once the watchdog has reported the stall in the
            # status document, as the monitor reads it (its in-memory status is set just before the write)
            while read_status(tmp_path).rules[0].RuleEvaluationStatus != ISSUES_FOUND:
                time.sleep(0.01)
            release.set()

    staller = threading.Thread(target=stall_after_the_third_step, daemon=True)
    staller.start()
    hung_loop(hook, hang_after=3, release=release, hung=hung)
    staller.join(timeout=300)
    released_by_the_watchdog = bool(exits)
    status = read_status(tmp_path)
    stalled = status.rules[0]
    assert stalled.RuleEvaluationStatus == ISSUES_FOUND
    assert (stalled.issue.step, stalled.issue.kind) == (2, "stalled") and stalled.issue.value > 0.5
    assert status.evidence.first_issue_step == 2
    if stop:
        assert exits == [EXIT_RULE_STOP] and released_by_the_watchdog
        assert status.training_ended and status.rules[1].RuleEvaluationStatus == NO_ISSUES_FOUND
        assert [(action.action, action.rule) for action in status.actions] == [("StopTraining", "StalledTrainingRule")]
        assert hook.stop_requested is not None and hook.stop_requested.rule_name == "StalledTrainingRule"
        assert (tmp_path / "failure").read_text().startswith("StopTraining: rule StalledTrainingRule found an issue at step 2")
    else:
        assert exits == [] and not status.training_ended and status.actions == []
        assert not (tmp_path / "failure").exists()
    hook.close()


def test_progress_in_an_evaluation_loop_is_not_a_stall(tmp_path):
    hook = Hook.from_configs(rule_configs=[rule("StalledTrainingRule", threshold="0.6")], out_dir=tmp_path, job_name="j")
    hook._stall_watchdog.exit_process = lambda code: None
    model = nn.Linear(4, 2)
    hook.register_module(model)
    with torch.no_grad():
        for _ in range(8):  # forward passes only, no step, for longer than the threshold
            model(torch.randn(2, 4))
            time.sleep(0.2)
    document = hook.close()
    assert document.rules[0].RuleEvaluationStatus == NO_ISSUES_FOUND


HUNG_JOB = textwrap.dedent(
    """
    import time
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset
    from debugger import Hook

    class Batches(Dataset):
        # the worker process hangs on the 5th batch, as a DataLoader worker deadlocked after fork does
        def __len__(self):
            return 100

        def __getitem__(self, index):
            if index == 4:
                with open("hang.txt", "w") as marker:
                    marker.write(str(time.time()))
                time.sleep(600)
            generator = torch.Generator().manual_seed(index)
            return torch.randn(8, 4, generator=generator), torch.randint(0, 2, (8,), generator=generator)

    hook = Hook.create_from_json_file()
    torch.manual_seed(0)
    model, criterion = nn.Linear(4, 2), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for inputs, labels in DataLoader(Batches(), batch_size=None, num_workers=1, prefetch_factor=1):
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        optimizer.step()
    """
)


@pytest.mark.training
def test_a_job_whose_loop_hangs_is_stopped_by_stalled_training_rule(tmp_path):
    # The rule also counts the time before the first step: at 3 s, a machine busy with two random-zoo runs and a full
    # test run took longer than that to start the loader's worker and was stopped at step 0, before the hang.
    threshold = 10
    source = tmp_path / "code"
    source.mkdir()
    (source / "train.py").write_text(HUNG_JOB)
    out_dir, failure = tmp_path / "tensors", tmp_path / "failure"
    arguments = [
        f"--{ENTRY_POINT_HYPERPARAMETER}", "train.py",
        f"--{HOOK_CONFIG_HYPERPARAMETER}", json.dumps({"HookParameters": {"save_interval": "2"}}),
        f"--{RULE_CONFIGS_HYPERPARAMETER}",
        json.dumps([rule("StalledTrainingRule", threshold=str(threshold), action_json=STOP), rule("ExplodingTensor")]),
    ]  # fmt: skip
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "DEBUG_OUTPUT_DIR": str(out_dir),
        "TRAINING_FAILURE_FILE": str(failure),
        "OMP_NUM_THREADS": "1",
    }
    with open(tmp_path / "job.log", "wb") as log_file:  # a file: the hung loader worker holds it open too
        process = subprocess.Popen(
            [sys.executable, "-c", f"from debugger.launcher import main; main({str(source)!r})", *arguments],
            cwd=source,
            env=environment,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        process.wait(timeout=300)  # generous: on a busy machine the job starts slowly; the rule ends it
        ended = time.time()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the loader worker still hangs, as the platform would find it
        process.wait()
    log = (tmp_path / "job.log").read_text(errors="replace")
    assert process.returncode == EXIT_RULE_STOP, log
    hang_started = float((source / "hang.txt").read_text())
    assert ended - hang_started > threshold, log  # not before the stall lasted the threshold

    status = read_status(out_dir)
    stalled, exploding = status.rules
    assert stalled.RuleConfigurationName == "StalledTrainingRule" and stalled.RuleEvaluationStatus == ISSUES_FOUND
    assert stalled.issue.step == 3 and stalled.issue.kind == "stalled" and stalled.issue.value > threshold
    assert exploding.RuleEvaluationStatus == NO_ISSUES_FOUND and status.training_ended
    stop = STOP_TRAINING_FAILURE.search(failure.read_text())
    assert (stop["rule"], stop["step"]) == ("StalledTrainingRule", "3")
    assert re.search(r"no training step for \d+ s after step 3", failure.read_text())
    assert sorted(path.name for path in (out_dir / "steps").iterdir()) == ["000000000000.npz", "000000000002.npz"]


# --------------------------------------------------------------------------- every rule fires at every save interval


def flat_job(tmp_path: Path, save_interval: str, rules: list[dict], steps: int, profile: str = "native"):
    """A job whose learning rate is 0: its loss is flat and its weights never change."""
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": save_interval}},
        rule_configs=rules,
        out_dir=tmp_path,
        job_name="flat",
        profile=profile,
    )
    torch.manual_seed(0)
    model, criterion = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    inputs, labels = torch.randn(32, 6), torch.randint(0, 4, (32,))
    for _ in range(steps):
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        optimizer.step()
    return {status.RuleConfigurationName: status for status in hook.close().rules}


@pytest.mark.parametrize("profile", ["native", "smdebug"])
@pytest.mark.parametrize("save_interval", ["1", "10", "500"])
def test_loss_not_decreasing_as_the_product_configures_it_fires_within_the_reference_job(tmp_path, save_interval, profile):
    from lambdas.remediation.job.job_request import rule_configs

    # the product's rules; the reference job runs 40 steps (2 epochs of 20)
    (loss_rule,) = [config for config in rule_configs("flat") if config["RuleConfigurationName"] == "LossNotDecreasing"]
    loss_rule["RuleParameters"].pop("action_json")
    statuses = flat_job(tmp_path, save_interval, [loss_rule], steps=40, profile=profile)
    assert statuses["LossNotDecreasing"].RuleEvaluationStatus == ISSUES_FOUND
    assert statuses["LossNotDecreasing"].issue.kind == "flat"


@pytest.mark.parametrize("profile", ["native", "smdebug"])
@pytest.mark.parametrize("save_interval", ["1", "10", "500"])
def test_weight_update_ratio_with_num_steps_fires_at_any_save_interval(tmp_path, save_interval, profile):
    statuses = flat_job(tmp_path, save_interval, [rule("WeightUpdateRatio", num_steps="10")], steps=12, profile=profile)
    status = statuses["WeightUpdateRatio"]
    assert status.RuleEvaluationStatus == ISSUES_FOUND
    assert status.issue.step == (1 if save_interval == "1" else 10) and status.issue.kind == "too_small"


def test_loss_not_decreasing_has_the_weights_saved_every_window_over_the_first_training_steps_only(tmp_path):
    # its stagnant test reads how far the weights moved (debugger.rules.weight_movement): at a save interval of 500
    # they are saved every 10 steps up to step 800, then at the save interval again, so a large model is not saved
    # every 10 steps all job long
    from debugger.rules.loss_rule import WEIGHT_STEPS
    from debugger.trial import create_trial

    flat_job(tmp_path, "500", [rule("LossNotDecreasing")], steps=WEIGHT_STEPS + 100)
    trial = create_trial(tmp_path)
    (weights, *_) = trial.tensor_names(collection="weights")
    assert trial.tensor(weights).steps() == sorted({*range(0, WEIGHT_STEPS + 1, 10), 500})


def test_weight_update_ratio_by_default_compares_the_previous_saved_step_however_sparse(tmp_path):
    statuses = flat_job(tmp_path, "500", [rule("WeightUpdateRatio")], steps=501)
    assert (statuses["WeightUpdateRatio"].RuleEvaluationStatus, statuses["WeightUpdateRatio"].issue.step) == (ISSUES_FOUND, 500)


def test_training_rules_are_registered_builtins():
    assert BUILTIN_RULES["ClassImbalance"] is ClassImbalance
    assert BUILTIN_RULES["StalledTrainingRule"] is StalledTrainingRule
