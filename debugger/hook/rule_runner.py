"""The hook's rules and its rule-status document (a mixin of :class:`debugger.hook.pytorch.hook.Hook`).

Every configured rule runs at every step's check; a rule that raises gets status Error (training goes on);
a rule that fires records its issue, the evidence and its actions; a StopTraining action makes the hook
raise :class:`StopTrainingRequested` before the optimizer can apply the step.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from datetime import datetime, timezone
from typing import Any

from contracts.divergence import GRADIENT_NORM, LOSS, divergence
from contracts.epoch_length import read_epoch_length
from contracts.job import checkpoint_directory
from contracts.loss_history import LossHistory
from contracts.rule_status import (
    ERROR,
    IN_PROGRESS,
    ISSUES_FOUND,
    MAX_REPORTED_LEARNING_RATES,
    RULE_STATUS_FILE,
    ActionRecord,
    Peak,
    RuleIssue,
    RuleStatus,
    RuleStatusDocument,
)
from contracts.step_names import step_name
from contracts.training_labels import LabelTally
from debugger.core.config import RuleSpec
from debugger.core.exceptions import TensorUnavailableForStep
from debugger.hook.stop_training import StopTrainingRequested
from debugger.rules.rule import Rule
from debugger.rules.tensor_signal import skipped_note
from debugger.storage import layout

LOGGER = logging.getLogger("debugger.hook")


def _now() -> str:
    # timezone.utc, not datetime.UTC (3.11+): SageMaker's XGBoost images run the debugger on Python 3.10.
    return datetime.now(timezone.utc).isoformat()  # noqa: UP017


#: Counting stops here: a checkpoint directory keeps a few files; the planner only needs to know whether any.
MAX_COUNTED_CHECKPOINT_FILES = 1000


def _count_files(directory: str | None) -> int | None:
    """Regular files under ``directory`` (at most MAX_COUNTED_CHECKPOINT_FILES); None when it does not exist."""
    if directory is None or not os.path.isdir(directory):
        return None
    count = 0
    for _, _, files in os.walk(directory):
        count += len(files)
        if count >= MAX_COUNTED_CHECKPOINT_FILES:
            return MAX_COUNTED_CHECKPOINT_FILES
    return count


@dataclasses.dataclass
class _RuleState:
    spec: RuleSpec
    rule: Rule
    status: str = IN_PROGRESS
    details: str = ""
    modified: str = ""
    issue: RuleIssue | None = None


class RuleRunner:
    """State set up by Hook.__init__: _rules, evidence, actions, metrics, _stop, out_dir, mirror, job_name."""

    def _update_evidence(self, step: int, loss: float | None, gradient_norm: float | None, training: bool = True) -> None:
        """``training``: the step trained (its loss joins the loss history; an evaluation step's does not)."""
        evidence = self.evidence
        if not self._initial_recorded:  # step 0, or the first step of a resumed job
            self._initial_recorded = True
            evidence.initial_loss = loss
            evidence.initial_gradient_norm = gradient_norm
        matched, seen = self._step_labels
        self._step_labels = [0, 0]
        if loss is not None and math.isfinite(loss):
            if training:
                self._loss_history.add(step, loss, matched / seen if seen else None)
            evidence.last_finite_loss = loss
            if evidence.loss_peak is None or loss > evidence.loss_peak.value:
                evidence.loss_peak = self._peak(loss, step)
        if gradient_norm is not None and math.isfinite(gradient_norm):
            if training:
                self._gradient_norm_history.add(step, gradient_norm)
            if evidence.gradient_norm_peak is None or gradient_norm > evidence.gradient_norm_peak.value:
                evidence.gradient_norm_peak = self._peak(gradient_norm, step)
                evidence.max_gradient_norm = gradient_norm
        evidence.last_step = step

    def _note_training_labels(self, counts: list[int], matched: int, dropout: float | None = None) -> None:
        """A training step's labels (counts by class), how many of them the model's top class matched, and the
        largest dropout probability active in the model as it did."""
        if dropout is not None and (self.evidence.training_dropout is None or dropout > self.evidence.training_dropout):
            self.evidence.training_dropout = dropout
        self._label_tally.add(counts)
        self._step_labels[0] += matched
        self._step_labels[1] += sum(counts)

    def _peak(self, value: float, step: int) -> Peak:
        return Peak(value=value, step=step, learning_rate=self._learning_rate(), phase=self._phase)

    def _optimizer_in_use(self) -> Any:
        """The optimizer training this model, when the hook knows one (the PyTorch hook does)."""
        return None

    def _note_job_state(self) -> None:
        """The optimizer and its current rates, and the checkpoint files so far, into the evidence."""
        optimizer = self._optimizer_in_use()
        if optimizer is not None:
            self.evidence.optimizer = type(optimizer).__name__
            rates = []
            for group in optimizer.param_groups:
                try:
                    rate = float(group["lr"])
                except (KeyError, TypeError, ValueError):
                    continue
                if math.isfinite(rate) and rate not in rates:
                    rates.append(rate)
            self.evidence.learning_rates = rates[:MAX_REPORTED_LEARNING_RATES] or None
        self.evidence.checkpoint_files = _count_files(checkpoint_directory(os.environ))
        self._name_reported_steps()
        self._read_epoch_length()
        self.evidence.loss_windows = self._loss_history.windows() or None
        self.evidence.gradient_norm_windows = self._gradient_norm_history.windows() or None
        evidence = self.evidence
        evidence.loss_divergence = divergence(evidence.loss_windows, evidence.initial_loss, LOSS)
        evidence.gradient_norm_divergence = divergence(
            evidence.gradient_norm_windows, evidence.initial_gradient_norm, GRADIENT_NORM
        )
        self.evidence.label_counts = self._label_tally.counts()
        repeated = self._input_repeats.share()
        if repeated is not None:  # a resumed job reports its own share once it has checked enough rows
            self.evidence.training_inputs_repeated = round(repeated, 4)

    def _name_reported_steps(self) -> None:
        """The optimizer steps of the windows' and peaks' global steps, which the sentences read from the report name
        (contracts.step_names). Asked at each report, not as a step is folded in: before an optimizer's first update
        the job cannot tell a training step from a micro-batch of the first update (optimizer_steps)."""
        numbering = getattr(self.trial, "step_numbering", None)
        if numbering is None:
            return  # an XGBoost job: its boosting round is its step
        for history in (self._loss_history, self._gradient_norm_history):
            history.name_steps(lambda step: numbering.optimizer_step(step)[0])
        for peak in (self.evidence.loss_peak, self.evidence.gradient_norm_peak):
            if peak is not None:
                optimizer_step, evaluation = numbering.optimizer_step(peak.step)
                if optimizer_step is not None:  # a peak a restarted job resumed keeps what its report said
                    peak.optimizer_step, peak.evaluation_pass = optimizer_step, evaluation

    def _read_epoch_length(self) -> None:
        """The script's steps per epoch in optimizer steps, in the unit the job's counts show it was given in
        (contracts.epoch_length); a job that counts no optimizer steps (XGBoost) keeps the number as stated."""
        stated, numbering = self.evidence.steps_per_epoch_stated, getattr(self.trial, "step_numbering", None)
        if stated is None or numbering is None:
            return
        length = read_epoch_length(stated, numbering.completed_epoch, numbering.epoch_so_far())
        evidence = self.evidence
        evidence.steps_per_epoch, evidence.steps_per_epoch_unit = length.steps, length.unit
        evidence.steps_per_epoch_reading, evidence.batches_per_step = length.why, length.accumulation

    def _evaluate_rules(self, step: int, learning_rate: float | None) -> None:
        changed = False
        for state in self._rules:
            if state.status != IN_PROGRESS:
                continue
            spec = state.spec
            if (spec.start_step is not None and step < spec.start_step) or (
                spec.end_step is not None and step >= spec.end_step
            ):
                continue
            state.rule.finding = None
            try:
                fired = state.rule.check(step)
            except TensorUnavailableForStep:
                continue
            except Exception as error:  # noqa: BLE001 - a broken rule must not stop training
                state.status, state.details, state.modified = ERROR, f"{type(error).__name__}: {error}", _now()
                LOGGER.warning("rule %s raised at step %d: %s", spec.name, step, state.details)
                changed = True
                continue
            if fired:
                changed = True
                self._record_issue(state, step, learning_rate)
        if changed or time.monotonic() - self._last_status_write > self._heartbeat:
            self.write_status()

    def _record_issue(self, state: _RuleState, step: int, learning_rate: float | None) -> None:
        finding = state.rule.finding
        phase = self._phase  # None unless the script said (set_context): never guessed
        message = finding.message if finding else f"{state.spec.name} returned True"
        state.status, state.details, state.modified = ISSUES_FOUND, message, _now()
        numbering = getattr(self.trial, "step_numbering", None)
        optimizer_step, evaluation = numbering.optimizer_step(step) if numbering is not None else (None, False)
        state.issue = RuleIssue(
            step=step,
            tensor=finding.tensor if finding else "",
            value=finding.value if finding else None,
            message=message,
            phase=phase,
            kind=finding.kind if finding else None,
            optimizer_step=optimizer_step,
            evaluation_pass=evaluation,
        )
        if self.evidence.first_issue_step is None:
            self.evidence.first_issue_step = step
            self.evidence.first_issue_optimizer_step = optimizer_step
            self.evidence.phase = phase
            self.evidence.learning_rate_at_issue = learning_rate
        for action in state.spec.actions:
            detail = action.get("endpoint", "") if action["name"] != "StopTraining" else message
            self.actions.append(
                ActionRecord(action=action["name"], rule=state.spec.name, step=step, at=_now(), detail=detail)
            )
            if action["name"] == "StopTraining" and self._stop is None:
                named = step_name(step, optimizer_step, evaluation, with_global=True)
                self._stop = StopTrainingRequested(state.spec.name, step, message, named)

    # ------------------------------------------------------------------ status document

    def _restore_status(self, document: RuleStatusDocument) -> None:
        """Go on from ``document``, the status an interrupted run of this job left: each rule's status and issue, the
        evidence, actions and metrics, the last step checked."""
        found = {rule.RuleConfigurationName: rule for rule in document.rules}
        for state in self._rules:
            rule = found.get(state.spec.name)
            if rule is not None:
                state.status, state.details, state.modified = rule.RuleEvaluationStatus, rule.StatusDetails, rule.LastModifiedTime
                state.issue = rule.issue
        self.evidence = dataclasses.replace(document.evidence)
        self._loss_history = LossHistory.resumed(document.evidence.loss_windows)
        self._gradient_norm_history = LossHistory.resumed(document.evidence.gradient_norm_windows)
        self._label_tally = LabelTally(document.evidence.label_counts)
        self._initial_recorded = document.last_step >= 0  # the job's initial loss and gradient norm are the first run's
        self.actions = list(document.actions)
        self.metrics.update(document.metrics)
        self._last_checked_step = document.last_step

    def status_document(self, training_ended: bool = False) -> RuleStatusDocument:
        self._note_job_state()
        return RuleStatusDocument(
            job_name=self.job_name,
            updated_at=_now(),
            training_ended=training_ended,
            last_step=self._last_checked_step,
            rules=[
                RuleStatus(
                    RuleConfigurationName=state.spec.name,
                    RuleEvaluationStatus=state.status,
                    StatusDetails=self._details(state),
                    LastModifiedTime=state.modified,
                    issue=state.issue,
                    not_judged=self._not_judged(state),
                )
                for state in self._rules
            ],
            evidence=dataclasses.replace(self.evidence),
            actions=list(self.actions),
            metrics=dict(self.metrics),
        )

    @staticmethod
    def _not_judged(state: _RuleState) -> str | None:
        """Why the rule cannot judge the job, while it has found no issue and raised no error."""
        if state.status in (ISSUES_FOUND, ERROR):
            return None
        why = getattr(state.rule, "not_judged", None)
        return str(why) if why else None

    @staticmethod
    def _details(state: _RuleState) -> str:
        """The status's details, and which tensors the rule skipped because they cannot show its problem."""
        if state.status == ERROR:
            return state.details
        skipped = skipped_note(state.rule.skipped_tensors())
        latest = getattr(state.rule, "latest_note", "") if state.status != ISSUES_FOUND else ""
        return "; ".join(part for part in (state.details, latest, skipped) if part)

    def write_status(self, training_ended: bool = False) -> RuleStatusDocument:
        """Write rule-status.json atomically (and to S3 when mirroring); under torch.distributed only rank 0 does."""
        document = self.status_document(training_ended)
        if not self.worker_role.is_chief:
            return document  # one document per job: the chief's (debugger.hook.distributed)
        text = document.to_json()
        layout.atomic_write_text(self.out_dir / RULE_STATUS_FILE, text)
        self._last_status_write = time.monotonic()
        if self.mirror is not None:
            self.mirror.put_status(text)
        return document

