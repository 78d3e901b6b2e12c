"""The situation the planner reads (lambdas/remediation/planning/situation.py) counts an issue's place in the epoch in
the unit the script's ``steps_per_epoch`` counts, optimizer steps, as the status document carries it: a run whose
global steps outnumber its optimizer steps (gradient accumulation: a global step a micro-batch) blows up early in
warmup, and the planner says so, where the global step would have put it past the first half epoch."""

from __future__ import annotations

import dataclasses
import json
import math

import torch
from torch import nn

from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from debugger import Hook, StopTrainingRequested
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.planning.situation import situation_of
from tests.lambdas.remediation.decision_fields import facts_of
from tests.lambdas.remediation.recorded_runs import finish

STOP = json.dumps([{"name": "StopTraining"}])
RULES = [
    {
        "RuleConfigurationName": "ExplodingTensor",
        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": STOP},
    }
]
#: The script's epoch, in optimizer steps (what Hook.set_context's steps_per_epoch counts), and its accumulation.
STEPS_PER_EPOCH, MICRO_BATCHES = 10, 4
#: The optimizer step whose first micro-batch's loss is infinite.
BLOWN_STEP = 3


def accumulating_run(tmp_path, seed: int) -> tuple[RuleStatusDocument, str]:
    """A badly scaled ReLU network (first layer and inputs far above the usual scale: an initial gradient norm near
    100) in its warmup epoch, each optimizer step summing the gradients of 4 micro-batches. Returns the status
    document and the StopTraining failure text."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(20)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    hook_config = {"HookParameters": {"save_interval": "1"}}
    hook = Hook.from_configs(hook_config, RULES, out_dir=tmp_path / "out", job_name="job")
    hook.register_module(model)
    hook.register_loss(criterion)
    hook.set_context(epoch=0, phase="warmup", steps_per_epoch=STEPS_PER_EPOCH, learning_rate=0.001)
    generator = torch.Generator().manual_seed(seed)
    try:
        for step in range(STEPS_PER_EPOCH):
            optimizer.zero_grad()
            for micro in range(MICRO_BATCHES):
                inputs = 20 * torch.randn(8, 6, generator=generator)
                labels = torch.randint(0, 3, (8,), generator=generator)
                scale = math.inf if (step, micro) == (BLOWN_STEP, 0) else 1.0
                (criterion(model(inputs), labels) * scale / MICRO_BATCHES).backward()
            optimizer.step()
    except StopTrainingRequested as stopped:
        failure = str(stopped)
    else:
        raise AssertionError("ExplodingTensor did not stop the run")
    finally:
        hook.close()
    return RuleStatusDocument.from_json((tmp_path / "out" / RULE_STATUS_FILE).read_text()), failure


def test_an_issue_early_in_optimizer_steps_is_early_however_many_micro_batches_came_before(tmp_path, account_input):
    document, failure = accumulating_run(tmp_path, seed=7)
    issue = document.rules[0].issue
    assert (issue.step, issue.optimizer_step) == (BLOWN_STEP * MICRO_BATCHES, BLOWN_STEP)
    assert document.evidence.first_issue_optimizer_step == BLOWN_STEP  # carried beside the global first_issue_step
    assert document.evidence.initial_gradient_norm > 50  # the badly scaled network the early variant is for

    state = initial_state(account_input)  # the built-in example's settings: batch norm can be added
    job = {
        "hyperparameters": state.run_spec.hyperparameters,
        "describe": {"TrainingJobName": "remediation-job-1", "TrainingJobStatus": "Failed", "FailureReason": failure},
        "rule_status": document.to_dict(),
    }
    state = finish(state, job)
    situation = situation_of(state.last_attempt)
    assert (situation.issue_step, situation.issue_optimizer_step, situation.early_limit) == (12, 3, 5)
    assert situation.early is True
    # the global step against the same half epoch, as the comparison read before: past it
    assert dataclasses.replace(situation, issue_optimizer_step=None).early is False

    decision = plan(state).last_attempt.decision
    assert decision.remedy == "AddBatchNorm"
    # the variant for a network that blows up in warmup's first steps: its condition held on the optimizer step
    assert facts_of(decision)["early"] == (BLOWN_STEP, STEPS_PER_EPOCH / 2)
    assert "phase" in facts_of(decision) and "initial_gradient_norm_above" in facts_of(decision)


def test_a_status_without_optimizer_steps_is_placed_by_its_global_step(tmp_path, account_input):
    """An older document (no optimizer step in its issue or evidence): the global step stands for it, as before."""
    document, failure = accumulating_run(tmp_path, seed=7)
    older = document.to_dict()
    for rule in older["rules"]:
        if rule.get("issue"):
            for key in ("optimizer_step", "evaluation_pass"):
                del rule["issue"][key]
    del older["evidence"]["first_issue_optimizer_step"]
    state = initial_state(account_input)
    job = {
        "hyperparameters": state.run_spec.hyperparameters,
        "describe": {"TrainingJobName": "remediation-job-1", "TrainingJobStatus": "Failed", "FailureReason": failure},
        "rule_status": older,
    }
    state = finish(state, job)
    situation = situation_of(state.last_attempt)
    assert (situation.issue_step, situation.early) == (BLOWN_STEP * MICRO_BATCHES, False)


#: A loader of 100 batches; the optimizer step whose first batch's loss is infinite: 0.6 of an epoch of 25.
LOADER_BATCHES, LATE_STEP = 100, 15


def loader_run(tmp_path, seed: int, accumulation: int, given_in_batches: bool) -> RuleStatusDocument:
    """A plain loop over a DataLoader of LOADER_BATCHES batches, ``accumulation`` batches an optimizer step, telling
    the hook ``steps_per_epoch=len(loader)`` (``given_in_batches``) or ``len(loader) // accumulation``; blows up at
    0.6 of its epoch (optimizer step 15 with accumulation 4, step 60 without)."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(seed)
    data = torch.utils.data.TensorDataset(
        torch.randn(8 * LOADER_BATCHES, 6, generator=generator), torch.randint(0, 3, (8 * LOADER_BATCHES,), generator=generator)
    )
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True, generator=generator)
    hook = Hook.from_configs({"HookParameters": {"save_interval": "10"}}, RULES, out_dir=tmp_path / "out", job_name="job")
    hook.register_module(model)
    hook.register_loss(criterion)
    given = len(loader) if given_in_batches else len(loader) // accumulation
    hook.set_context(epoch=0, phase="warmup", steps_per_epoch=given, learning_rate=0.05)
    blown = int(0.6 * len(loader) / accumulation)
    try:
        for batch, (inputs, labels) in enumerate(loader):
            scale = math.inf if batch == blown * accumulation else 1.0
            (criterion(model(inputs), labels) * scale / accumulation).backward()
            if (batch + 1) % accumulation == 0:
                optimizer.step()
                optimizer.zero_grad()
    except StopTrainingRequested:
        pass
    else:
        raise AssertionError("ExplodingTensor did not stop the run")
    finally:
        hook.close()
    return RuleStatusDocument.from_json((tmp_path / "out" / RULE_STATUS_FILE).read_text())


def situation_from(document: RuleStatusDocument, account_input):
    state = initial_state(account_input)
    failure = f"StopTraining: rule ExplodingTensor found an issue at step {document.evidence.first_issue_step}: x"
    job = {
        "hyperparameters": state.run_spec.hyperparameters,
        "describe": {"TrainingJobName": "remediation-job-1", "TrainingJobStatus": "Failed", "FailureReason": failure},
        "rule_status": document.to_dict(),
    }
    return finish(state, job)


def test_steps_per_epoch_given_in_batches_by_an_accumulating_script_is_read_in_optimizer_steps(tmp_path, account_input):
    """Decision 206: len(loader) = 100 batches, 4 an optimizer step: an epoch of 25 optimizer steps, and an issue at
    optimizer step 15 (0.6 of it) is not early; read as 100 optimizer steps it was."""
    document = loader_run(tmp_path, seed=21, accumulation=4, given_in_batches=True)
    evidence = document.evidence
    assert evidence.first_issue_optimizer_step == LATE_STEP
    assert (evidence.steps_per_epoch, evidence.steps_per_epoch_stated, evidence.steps_per_epoch_unit) == (25, 100, "batches")
    assert evidence.batches_per_step == 4
    assert evidence.steps_per_epoch_reading == "every one of the job's 15 optimizer steps so far took 4 batches"
    state = situation_from(document, account_input)
    situation = situation_of(state.last_attempt)
    assert (situation.issue_optimizer_step, situation.early_limit, situation.early) == (LATE_STEP, 12.5, False)
    assert dataclasses.replace(situation, steps_per_epoch=LOADER_BATCHES).early is True  # the number as given
    decision = plan(state).last_attempt.decision
    assert "(warmup phase, 25 steps per epoch (the script's 100 read as batches: every one of the job's 15 optimizer " \
        "steps so far took 4 batches)" in decision.reason


def test_steps_per_epoch_given_in_optimizer_steps_or_without_accumulation_is_read_as_given(tmp_path, account_input):
    """The same loop telling len(loader) // 4 = 25 optimizer steps, and one without accumulation telling its 100
    batches: each number read as given, each issue at 0.6 of its epoch not early, as before decision 206."""
    for name, seed, accumulation, given_in_batches, blown, stated in (
        ("optimizer-steps", 22, 4, False, LATE_STEP, 25),
        ("no-accumulation", 23, 1, True, 60, 100),
    ):
        document = loader_run(tmp_path / name, seed, accumulation, given_in_batches)
        evidence = document.evidence
        assert evidence.first_issue_optimizer_step == blown
        assert (evidence.steps_per_epoch, evidence.steps_per_epoch_stated, evidence.steps_per_epoch_unit) == (
            stated, stated, "optimizer steps"
        )
        assert evidence.batches_per_step is None and evidence.steps_per_epoch_reading is None
        situation = situation_of(situation_from(document, account_input).last_attempt)
        assert (situation.early_limit, situation.early) == (stated / 2, False)
