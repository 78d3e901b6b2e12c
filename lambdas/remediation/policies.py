"""Remediation policies: which run_spec to launch next after a training attempt, and why.

A policy is declarative: for each debugger rule name (``"*"`` for any other) an
ordered list of prescriptions, each a condition on the evidence plus a remedy
with its own bound (a remedy whose bound is reached does not apply). The first
prescription whose condition holds and whose remedy applies wins.

Two policies:

* ``anchor`` reproduces the AWS sample's fixed ladder exactly: ``plan_launch_spec``
  of the monitor Lambda in the sample of the AWS blog post "Automating complex deep
  learning model training using Amazon SageMaker Debugger and AWS Step Functions"
  (https://aws.amazon.com/blogs/machine-learning/automating-complex-deep-learning-model-training-using-amazon-sagemaker-debugger-and-aws-step-functions/).
  Halve ``warmup_learning_rate`` while
  ``warmup_learning_rate / 5 >= 1e-3``; else add batch norm if absent; else
  ``learning_rate * 0.9`` while that stays ``> 1e-3``; else end.
* ``evidence`` (default) reads the debugger's evidence. On the reference
  scenario (DESIGN §1) a ResNet without batch norm explodes in its first steps
  with an initial gradient norm in the hundreds for every warmup rate from 0.8
  down to 0.0125, so lowering the warmup rate only delays the explosion; batch
  norm with warmup <= 0.1 fixes it. So that evidence adds batch norm at once.

:func:`plan` reads the last attempt, records the decision (remedy, a readable
reason citing the evidence numbers, next action, the changes) on it, and either
sets ``next_action="launch_new"`` with the new run_spec and the sample's history
counters incremented, or ``next_action="end"`` with ``end_reason``. It ends when
the relaunch budget (``max_num_retraining``) is spent. Pure: no AWS calls.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from lambdas.remediation.payload import Attempt, Change, Decision, RunSpec, WorkflowState

#: An initial total gradient norm above this means the network is badly scaled at
#: initialisation (measured: 200-950 without batch norm, 7-8 with it).
INIT_SCALE_GRADIENT_NORM = 50.0
#: With batch norm, warmup rates above this exploded in the reference runs; at or below it, stable.
STABLE_WARMUP_LEARNING_RATE = 0.1
#: The evidence policy never lowers a learning rate below this.
LEARNING_RATE_FLOOR = 1e-4
#: ... nor raises one above this.
LEARNING_RATE_CEILING = 0.4
#: Without steps_per_epoch in the evidence, an issue before this step counts as "in the first steps".
EARLY_STEP_FALLBACK = 10

ANY_RULE = "*"
NO_REMEDY = "none"

HISTORY_COUNTERS = {
    "warmup_learning_rate": "num_warmup_adjustments",
    "add_batch_norm": "num_batch_layer_adjustments",
    "learning_rate": "num_learning_rate_adjustments",
    "activation": "num_activation_adjustments",
}


class PlanningError(ValueError):
    """plan() was called on a state it cannot plan from; the message says what is missing."""


# --------------------------------------------------------------------------- what the planner knows


@dataclasses.dataclass(frozen=True)
class Situation:
    """The last attempt's issue and evidence, with the phase resolved."""

    rule: str
    step: int | None
    phase: str | None
    steps_per_epoch: int | None
    initial_gradient_norm: float | None
    initial_loss: float | None
    last_finite_loss: float | None
    max_gradient_norm: float | None
    value: float | None
    tensor: str
    ran: RunSpec

    @classmethod
    def from_attempt(cls, attempt: Attempt) -> Situation:
        evidence = attempt.evidence
        issue = attempt.issue
        rule = issue.rule if issue else _first_rule_with_issues(attempt)
        step = issue.step if issue and issue.step is not None else (evidence.first_issue_step if evidence else None)
        steps_per_epoch = evidence.steps_per_epoch if evidence else None
        phase = (issue.phase if issue else None) or (evidence.phase if evidence else None)
        if phase is None and step is not None and steps_per_epoch:
            phase = "warmup" if step < steps_per_epoch * attempt.run_spec.warmup_epochs else "main"
        return cls(
            rule=rule,
            step=step,
            phase=phase,
            steps_per_epoch=steps_per_epoch,
            initial_gradient_norm=evidence.initial_gradient_norm if evidence else None,
            initial_loss=evidence.initial_loss if evidence else None,
            last_finite_loss=evidence.last_finite_loss if evidence else None,
            max_gradient_norm=evidence.max_gradient_norm if evidence else None,
            value=issue.value if issue else None,
            tensor=issue.tensor if issue else "",
            ran=attempt.run_spec,
        )

    @property
    def in_first_steps(self) -> bool:
        if self.step is None:
            return False
        if self.steps_per_epoch:
            return self.step < self.steps_per_epoch / 2
        return self.step < EARLY_STEP_FALLBACK

    @property
    def init_scale_gradients(self) -> bool:
        norm = self.initial_gradient_norm
        return norm is not None and math.isfinite(norm) and norm > INIT_SCALE_GRADIENT_NORM

    @property
    def loss_rising(self) -> bool:
        if self.initial_loss is None or self.last_finite_loss is None:
            return False
        return self.last_finite_loss >= self.initial_loss

    @property
    def loss_stuck(self) -> bool:
        if self.initial_loss is None or self.last_finite_loss is None:
            return False
        return self.last_finite_loss < self.initial_loss

    def headline(self) -> str:
        """'ExplodingTensor fired at step 2 (warmup phase, step 2 of 20 per epoch)'."""
        where = f" at step {self.step}" if self.step is not None else ""
        details = []
        if self.phase:
            details.append(f"{self.phase} phase")
        if self.steps_per_epoch:
            details.append(f"{self.steps_per_epoch} steps per epoch")
        if self.tensor:
            details.append(f"tensor {self.tensor} = {_number(self.value)}")
        suffix = f" ({', '.join(details)})" if details else ""
        return f"{self.rule} fired{where}{suffix}"

    def evidence_numbers(self) -> str:
        parts = []
        if self.initial_gradient_norm is not None:
            parts.append(f"initial gradient norm {_number(self.initial_gradient_norm)}")
        if self.initial_loss is not None:
            parts.append(f"initial loss {_number(self.initial_loss)}")
        if self.last_finite_loss is not None:
            parts.append(f"last finite loss {_number(self.last_finite_loss)}")
        if self.max_gradient_norm is not None:
            parts.append(f"max gradient norm {_number(self.max_gradient_norm)}")
        return ", ".join(parts) if parts else "no numeric evidence"


def _first_rule_with_issues(attempt: Attempt) -> str:
    for status in attempt.rule_statuses:
        if status.status == "IssuesFound":
            return status.name
    return "unknown rule"


# --------------------------------------------------------------------------- remedies


class Remedy(Protocol):
    name: str

    def applies(self, spec: RunSpec) -> bool: ...

    def apply(self, spec: RunSpec) -> RunSpec: ...

    def bound(self, spec: RunSpec) -> str:
        """Why it applies or not, with the numbers."""
        ...


@dataclasses.dataclass(frozen=True)
class HalveWarmupWhile:
    """The sample's first rung: warmup x0.5 while warmup / divisor >= minimum."""

    divisor: float = 5.0
    minimum: float = 1e-3
    name: str = "HalveWarmupLearningRate"

    def applies(self, spec: RunSpec) -> bool:
        return spec.warmup_learning_rate / self.divisor >= self.minimum

    def apply(self, spec: RunSpec) -> RunSpec:
        return _with(spec, warmup_learning_rate=spec.warmup_learning_rate * 0.5)

    def bound(self, spec: RunSpec) -> str:
        ratio = spec.warmup_learning_rate / self.divisor
        sign = ">=" if self.applies(spec) else "<"
        return f"warmup_learning_rate / {self.divisor:g} = {_number(ratio)} {sign} {self.minimum:g}"


@dataclasses.dataclass(frozen=True)
class AddBatchNorm:
    """Batch norm before the residual add; optionally cap the warmup rate at the same time."""

    warmup_cap: float | None = None
    name: str = "AddBatchNorm"

    def applies(self, spec: RunSpec) -> bool:
        return not spec.add_batch_norm

    def apply(self, spec: RunSpec) -> RunSpec:
        warmup = spec.warmup_learning_rate
        if self.warmup_cap is not None:
            warmup = min(warmup, self.warmup_cap)
        return _with(spec, add_batch_norm=True, warmup_learning_rate=warmup)

    def bound(self, spec: RunSpec) -> str:
        return "batch norm is off" if self.applies(spec) else "batch norm is already on"


@dataclasses.dataclass(frozen=True)
class ScaleLearningRate:
    """learning_rate x factor while the result stays strictly above ``floor`` and at or below ``ceiling``."""

    factor: float
    floor: float = 0.0
    ceiling: float = math.inf
    name: str = "ScaleLearningRate"

    def applies(self, spec: RunSpec) -> bool:
        scaled = spec.learning_rate * self.factor
        return self.floor < scaled <= self.ceiling

    def apply(self, spec: RunSpec) -> RunSpec:
        return _with(spec, learning_rate=spec.learning_rate * self.factor)

    def bound(self, spec: RunSpec) -> str:
        scaled = spec.learning_rate * self.factor
        if scaled <= self.floor:
            return f"learning_rate x {self.factor:g} = {_number(scaled)} <= {self.floor:g}"
        if scaled > self.ceiling:
            return f"learning_rate x {self.factor:g} = {_number(scaled)} > {self.ceiling:g}"
        return f"learning_rate x {self.factor:g} = {_number(scaled)} > {self.floor:g}"


@dataclasses.dataclass(frozen=True)
class LowerWarmupLearningRate:
    """Warmup down to ``cap`` if above it, else x factor; not below ``floor``."""

    cap: float = STABLE_WARMUP_LEARNING_RATE
    factor: float = 0.5
    floor: float = LEARNING_RATE_FLOOR
    name: str = "LowerWarmupLearningRate"

    def target(self, spec: RunSpec) -> float:
        warmup = spec.warmup_learning_rate
        return self.cap if warmup > self.cap else warmup * self.factor

    def applies(self, spec: RunSpec) -> bool:
        return self.target(spec) >= self.floor

    def apply(self, spec: RunSpec) -> RunSpec:
        return _with(spec, warmup_learning_rate=self.target(spec))

    def bound(self, spec: RunSpec) -> str:
        sign = ">=" if self.applies(spec) else "<"
        return f"new warmup_learning_rate {_number(self.target(spec))} {sign} {self.floor:g}"


@dataclasses.dataclass(frozen=True)
class RaiseWarmupLearningRate:
    """Warmup x factor, capped at ``cap`` and at the main learning rate."""

    factor: float = 2.0
    cap: float = STABLE_WARMUP_LEARNING_RATE
    name: str = "RaiseWarmupLearningRate"

    def target(self, spec: RunSpec) -> float:
        return min(spec.warmup_learning_rate * self.factor, self.cap, spec.learning_rate)

    def applies(self, spec: RunSpec) -> bool:
        return self.target(spec) > spec.warmup_learning_rate

    def apply(self, spec: RunSpec) -> RunSpec:
        return _with(spec, warmup_learning_rate=self.target(spec))

    def bound(self, spec: RunSpec) -> str:
        limit = min(self.cap, spec.learning_rate)
        sign = "<" if self.applies(spec) else ">="
        return f"warmup_learning_rate {_number(spec.warmup_learning_rate)} {sign} min({self.cap:g}, learning_rate) = {_number(limit)}"


@dataclasses.dataclass(frozen=True)
class SwitchActivation:
    """Replace an activation that lets units die (ReLU) with one that keeps a gradient."""

    replaces: tuple[str, ...] = ("relu",)
    to: str = "leaky_relu"
    name: str = "SwitchActivation"

    def applies(self, spec: RunSpec) -> bool:
        return spec.activation in self.replaces

    def apply(self, spec: RunSpec) -> RunSpec:
        return _with(spec, activation=self.to)

    def bound(self, spec: RunSpec) -> str:
        return f"activation is {spec.activation}"


def _with(spec: RunSpec, **changes: Any) -> RunSpec:
    return RunSpec.model_validate({**spec.model_dump(), **changes})


# --------------------------------------------------------------------------- policies


@dataclasses.dataclass(frozen=True)
class Condition:
    """A named test on the situation; ``because`` turns it into the reason's middle sentence."""

    test: Callable[[Situation], bool]
    because: Callable[[Situation], str]

    def __call__(self, situation: Situation) -> bool:
        return self.test(situation)


ALWAYS = Condition(lambda s: True, lambda s: "")


@dataclasses.dataclass(frozen=True)
class Prescription:
    remedy: Remedy
    when: Condition = ALWAYS


@dataclasses.dataclass(frozen=True)
class Policy:
    name: str
    prescriptions: Mapping[str, tuple[Prescription, ...]]

    def ladder(self, rule: str) -> tuple[Prescription, ...]:
        return self.prescriptions.get(rule, self.prescriptions.get(ANY_RULE, ()))

    def choose(self, situation: Situation, spec: RunSpec) -> Prescription | None:
        for prescription in self.ladder(situation.rule):
            if prescription.when(situation) and prescription.remedy.applies(spec):
                return prescription
        return None


ANCHOR_POLICY = Policy(
    name="anchor",
    prescriptions={
        ANY_RULE: (
            Prescription(HalveWarmupWhile(divisor=5.0, minimum=1e-3)),
            Prescription(AddBatchNorm()),
            Prescription(ScaleLearningRate(factor=0.9, floor=1e-3)),
        )
    },
)


def _no_batch_norm_early_init_scale(s: Situation) -> bool:
    return not s.ran.add_batch_norm and s.phase == "warmup" and s.in_first_steps and s.init_scale_gradients


EXPLODING_AT_INIT = Condition(
    _no_batch_norm_early_init_scale,
    lambda s: (
        f"an initial gradient norm of {_number(s.initial_gradient_norm)} (> {INIT_SCALE_GRADIENT_NORM:g}) and initial loss "
        f"{_number(s.initial_loss)} with no batch norm mean the network is badly scaled at initialisation, and blowing up in the first steps of warmup "
        f"(before step {_first_steps_limit(s)}) means a lower warmup rate would only delay the explosion"
    ),
)
NO_BATCH_NORM = Condition(
    lambda s: not s.ran.add_batch_norm,
    lambda s: (
        f"the network has no batch norm ({s.evidence_numbers()}); without it lowering the learning rates only "
        "delays the blow-up"
    ),
)
IN_WARMUP = Condition(
    lambda s: s.phase == "warmup",
    lambda s: (
        f"batch norm is on and it blew up during warmup at warmup_learning_rate {_number(s.ran.warmup_learning_rate)} "
        f"({s.evidence_numbers()}), so the warmup rate is too high for this network (the reference network with "
        f"batch norm was stable at warmup <= {STABLE_WARMUP_LEARNING_RATE:g})"
    ),
)
IN_MAIN_PHASE = Condition(
    lambda s: s.phase == "main",
    lambda s: (
        f"batch norm is on and it blew up after warmup at learning_rate {_number(s.ran.learning_rate)} "
        f"({s.evidence_numbers()}), so the main rate is too high"
    ),
)
PHASE_UNKNOWN = Condition(
    lambda s: s.phase is None,
    lambda s: f"the evidence does not say in which phase it happened ({s.evidence_numbers()})",
)
VANISHING_NO_BATCH_NORM = Condition(
    lambda s: not s.ran.add_batch_norm,
    lambda s: f"gradients vanish without batch norm ({s.evidence_numbers()}); batch norm keeps them scaled",
)
DYING_ACTIVATION = Condition(
    lambda s: s.ran.activation == "relu",
    lambda s: "batch norm is on and the activation is relu, whose units can die and stop passing gradient",
)
VANISHING_IN_WARMUP = Condition(
    lambda s: s.phase == "warmup",
    lambda s: (
        f"batch norm is on and gradients vanish during warmup at warmup_learning_rate "
        f"{_number(s.ran.warmup_learning_rate)} ({s.evidence_numbers()}): the warmup rate is too small to move"
    ),
)
VANISHING_ANYWHERE = Condition(
    lambda s: True,
    lambda s: (
        f"batch norm is on and gradients vanish at learning_rate {_number(s.ran.learning_rate)} "
        f"({s.evidence_numbers()}): the updates are too small"
    ),
)
LOSS_RISING_IN_WARMUP = Condition(
    lambda s: s.phase == "warmup" and s.loss_rising,
    lambda s: (
        f"the loss went from {_number(s.initial_loss)} to {_number(s.last_finite_loss)} during warmup: it oscillates "
        "or rises, so the warmup rate is too high"
    ),
)
LOSS_STUCK_IN_WARMUP = Condition(
    lambda s: s.phase == "warmup" and s.loss_stuck,
    lambda s: (
        f"the loss only went from {_number(s.initial_loss)} to {_number(s.last_finite_loss)} during warmup at "
        f"warmup_learning_rate {_number(s.ran.warmup_learning_rate)}: it is stuck, so the warmup rate is too small"
    ),
)
LOSS_NOT_DECREASING = Condition(
    lambda s: True,
    lambda s: (
        f"the loss stopped decreasing at learning_rate {_number(s.ran.learning_rate)} ({s.evidence_numbers()}), "
        "so the main rate overshoots"
    ),
)
OTHER_RULE = Condition(lambda s: True, lambda s: f"{s.rule} has no dedicated remedy ({s.evidence_numbers()})")

_LOWER_LEARNING_RATE = ScaleLearningRate(factor=0.5, floor=LEARNING_RATE_FLOOR)
_ADD_BATCH_NORM_STABLE_WARMUP = AddBatchNorm(warmup_cap=STABLE_WARMUP_LEARNING_RATE)

EVIDENCE_POLICY = Policy(
    name="evidence",
    prescriptions={
        "ExplodingTensor": (
            Prescription(_ADD_BATCH_NORM_STABLE_WARMUP, EXPLODING_AT_INIT),
            Prescription(_ADD_BATCH_NORM_STABLE_WARMUP, NO_BATCH_NORM),
            Prescription(LowerWarmupLearningRate(), IN_WARMUP),
            Prescription(_LOWER_LEARNING_RATE, IN_MAIN_PHASE),
            Prescription(_LOWER_LEARNING_RATE, PHASE_UNKNOWN),
        ),
        "VanishingGradient": (
            Prescription(AddBatchNorm(), VANISHING_NO_BATCH_NORM),
            Prescription(SwitchActivation(), DYING_ACTIVATION),
            Prescription(RaiseWarmupLearningRate(), VANISHING_IN_WARMUP),
            Prescription(ScaleLearningRate(factor=2.0, ceiling=LEARNING_RATE_CEILING), VANISHING_ANYWHERE),
        ),
        "LossNotDecreasing": (
            Prescription(LowerWarmupLearningRate(), LOSS_RISING_IN_WARMUP),
            Prescription(RaiseWarmupLearningRate(), LOSS_STUCK_IN_WARMUP),
            Prescription(_LOWER_LEARNING_RATE, LOSS_NOT_DECREASING),
        ),
        ANY_RULE: (
            Prescription(_ADD_BATCH_NORM_STABLE_WARMUP, NO_BATCH_NORM),
            Prescription(_LOWER_LEARNING_RATE, OTHER_RULE),
        ),
    },
)

POLICIES: dict[str, Policy] = {ANCHOR_POLICY.name: ANCHOR_POLICY, EVIDENCE_POLICY.name: EVIDENCE_POLICY}


# --------------------------------------------------------------------------- planning


def plan(state: WorkflowState) -> WorkflowState:
    """Decide after the last attempt: relaunch with a new run_spec, or end with a reason."""
    attempt = state.last_attempt
    if attempt is None:
        raise PlanningError("attempts: plan needs a finished attempt; the state has none (launch a job first)")
    if attempt.outcome == "running":
        raise PlanningError(
            f"attempts[-1].outcome: job {attempt.job_name} is still running; the monitor decides when to plan"
        )
    if attempt.outcome != "issues_found":
        return _end(state, _outcome_reason(state, attempt), end_cause=attempt.outcome)

    situation = Situation.from_attempt(attempt)
    policy = POLICIES[state.policy]
    prescription = policy.choose(situation, state.run_spec)
    if prescription is None:
        return _end(state, _exhausted_reason(policy, situation, state.run_spec), end_cause="no_remedy_left")

    new_spec = prescription.remedy.apply(state.run_spec)
    changes = _changes(state.run_spec, new_spec)
    what = _describe_changes(changes, state.run_spec)
    why = _why(policy, prescription, situation, state.run_spec)
    if state.history.num_retraining >= state.max_num_retraining:
        reason = (
            f"{situation.headline()}. The relaunch budget is spent ({state.history.num_retraining} of "
            f"max_num_retraining={state.max_num_retraining} used); the next remedy would have been "
            f"{prescription.remedy.name} ({what}). Ending."
        )
        return _end(state, reason, end_cause="budget_spent")

    reason = f"{situation.headline()}. {why}: {what}."
    decision = Decision(remedy=prescription.remedy.name, reason=reason, next_action="launch_new", changes=changes)
    history = state.history.model_copy()
    for field in changes:
        counter = HISTORY_COUNTERS.get(field)
        if counter:
            setattr(history, counter, getattr(history, counter) + 1)
    history.num_retraining += 1
    planned = state.with_last_attempt(decision=decision)
    return planned.updated(run_spec=new_spec, history=history, next_action="launch_new", end_reason=None)


def _why(policy: Policy, prescription: Prescription, situation: Situation, spec: RunSpec) -> str:
    if policy is ANCHOR_POLICY:
        rung = policy.ladder(situation.rule).index(prescription) + 1
        return f"The sample's ladder, rung {rung} of 3: {prescription.remedy.bound(spec)}"
    because = prescription.when.because(situation)
    return (because[:1].upper() + because[1:]) if because else prescription.remedy.bound(spec)


def _end(state: WorkflowState, reason: str, end_cause: str) -> WorkflowState:
    decision = Decision(remedy=NO_REMEDY, reason=reason, next_action="end", end_cause=end_cause)
    return state.with_last_attempt(decision=decision).updated(next_action="end", end_reason=reason)


def _exhausted_reason(policy: Policy, situation: Situation, spec: RunSpec) -> str:
    bounds = "; ".join(
        f"{item.remedy.name}: {item.remedy.bound(spec)}"
        for item in policy.ladder(situation.rule)
        if item.when(situation)
    )
    return (
        f"{situation.headline()}. The {policy.name} policy has no remedy left for it "
        f"({bounds or 'no prescription matches the evidence'}). Ending with run_spec: {spec.summary()}."
    )


def _outcome_reason(state: WorkflowState, attempt: Attempt) -> str:
    job = attempt.job_name
    failure = f": {attempt.failure_reason}" if attempt.failure_reason else ""
    attempts = f"{state.attempt_count} attempt{'s' if state.attempt_count != 1 else ''}"
    reasons = {
        "completed": f"Job {job} completed with no rule issues after {attempts}; final run_spec: {attempt.run_spec.summary()}.",
        "algorithm_error": (
            f"Job {job} failed in the training code, not because a rule fired{failure}. "
            "Other hyperparameters would not fix that; ending."
        ),
        "capacity_error": (
            f"Job {job} got no {attempt.run_spec.instance_type} capacity after {state.history.capacity_retries} "
            f"retries{failure}. Ending; try another instance type or region."
        ),
        "stopped": f"Job {job} was stopped outside the workflow{failure}; ending.",
        "failed": f"Job {job} failed{failure}; ending.",
        "monitor_limit": (
            f"Job {job} was still running after {state.history.num_monitor_transitions} monitor transitions "
            f"(max_monitor_transitions={state.max_monitor_transitions}); ending."
        ),
    }
    return reasons[attempt.outcome]


def _changes(before: RunSpec, after: RunSpec) -> dict[str, Change]:
    old, new = before.model_dump(), after.model_dump()
    return {name: Change(before=old[name], after=new[name]) for name in old if old[name] != new[name]}


def _describe_changes(changes: Mapping[str, Change], before_spec: RunSpec) -> str:
    phrases = []
    for name, change in changes.items():
        if name == "add_batch_norm":
            phrases.append("adding batch norm" if change.after else "removing batch norm")
        else:
            before, after = change.before, change.after
            if isinstance(before, float) and isinstance(after, float):
                verb = "lowering" if after < before else "raising"
                phrases.append(f"{verb} {name} {_number(before)} -> {_number(after)}")
            else:
                phrases.append(f"changing {name} {before} -> {after}")
    if "add_batch_norm" in changes and "warmup_learning_rate" not in changes:
        return f"{phrases[0]} (warmup_learning_rate stays {_number(before_spec.warmup_learning_rate)})"
    return ", ".join(phrases)


def short_action(decision: Decision) -> str:
    """'adding batch norm', 'lowering warmup LR to 0.05': a few words for a notification subject."""
    if not decision.changes:
        return "ending"
    names = {
        "warmup_learning_rate": "warmup LR",
        "learning_rate": "LR",
        "activation": "activation",
    }
    phrases = []
    for name, change in decision.changes.items():
        if name == "add_batch_norm":
            phrases.append("adding batch norm" if change.after else "removing batch norm")
        elif isinstance(change.before, float) and isinstance(change.after, float):
            verb = "lowering" if change.after < change.before else "raising"
            phrases.append(f"{verb} {names.get(name, name)} to {_number(change.after)}")
        else:
            phrases.append(f"{names.get(name, name)} -> {change.after}")
    return ", ".join(phrases)


def _first_steps_limit(s: Situation) -> str:
    return f"{s.steps_per_epoch / 2:g}, half an epoch" if s.steps_per_epoch else str(EARLY_STEP_FALLBACK)


def _number(value: float | None) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"
