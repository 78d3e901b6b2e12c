"""Sentences about a run's jobs and decisions, shared by the planner's reasons (``lambdas.remediation.planning.reasons``)
and the notifications: what happened to a job (with the rule's own words and numbers), what changes from what to what,
what the next job does with the stopped job's checkpoints, and why a run that cannot be remedied ends."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.debugger_settings import BY_FIELD
from contracts.epoch_length import BATCHES
from contracts.hyperparameter_values import FLAG, is_number
from contracts.remedies import BATCH_OF_ONE, DATA_ERROR, OUT_OF_MEMORY, show
from contracts.step_names import step_name
from lambdas.remediation.state.attempts import Attempt, AttemptEvidence, Change, Decision
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.validation_messages import clip


def headline(attempt: Attempt, state: WorkflowState) -> str:
    """'VanishingGradient fired at step 5 (warmup phase, 20 steps per epoch): mean |gradient| of ... < threshold'.
    The rule's message says what its value is (a count of steps, a percentage of units, a tensor's value);
    without one the value is named the rule's, not the tensor's."""
    if attempt.outcome == "objective_missed" and attempt.issue is not None and attempt.issue.message:
        # stopped by ObjectiveOutOfReach (contracts.objective_reach): its message has the numbers
        step = f" at {attempt.issue.step_name()}" if attempt.issue.step is not None else ""
        return f"Job {attempt.job_name} was stopped by {attempt.issue.rule}{step}: {attempt.issue.message.rstrip('.')}"
    if attempt.outcome == "objective_missed":
        objective = state.declared_objective()
        value = attempt.objective_value
        target = objective.describe() if objective else "the objective"
        if value is None or objective is None:
            return f"Job {attempt.job_name} completed but missed {target}"
        return (
            f"Job {attempt.job_name} completed with quiet rules but {objective.metric_name} = {show(value)} missed "
            f"{target} by {show(objective.shortfall(value))}"
        )
    if attempt.outcome == DATA_ERROR:
        issue = attempt.issue
        if issue is not None and issue.message:
            return f"Job {attempt.job_name}: {issue.rule} found bad data at {issue.step_name()} ({issue.message})"
        return f"Job {attempt.job_name} failed on its data ({attempt.failure_reason or 'no reason given'})"
    if attempt.outcome == OUT_OF_MEMORY:
        cause = attempt.failure_reason.split(". ", 1)[0] or "no reason given"
        return f"Job {attempt.job_name} ran out of memory ({cause})"
    if attempt.outcome == BATCH_OF_ONE:
        cause = clip(attempt.failure_reason, 300) or "no reason given"
        return f"Job {attempt.job_name} failed on a training batch of one sample ({cause})"
    issue, evidence = attempt.issue, attempt.evidence
    step = issue.step_name() if issue and issue.step is not None else None
    if step is None and evidence is not None and evidence.first_issue_step is not None:
        step = step_name(evidence.first_issue_step, evidence.first_issue_optimizer_step, with_global=True)
    phase = (issue.phase if issue else None) or (evidence.phase if evidence else None)
    where = f" at {step}" if step is not None else ""
    details = []
    if phase:
        details.append(f"{phase} phase")
    if evidence is not None and evidence.steps_per_epoch:
        details.append(f"{evidence.steps_per_epoch} steps per epoch{epoch_read_as_batches(evidence)}")
    if issue is not None and issue.tensor and not issue.message:
        value = show(issue.value) if issue.value is not None else "unknown"
        details.append(f"tensor {issue.tensor}, the rule's value {value}")
    suffix = f" ({', '.join(details)})" if details else ""
    said = f": {issue.message.rstrip('.')}" if issue is not None and issue.message else ""
    return f"{attempt.failure_key} fired{where}{suffix}{said}"


def epoch_read_as_batches(evidence: AttemptEvidence) -> str:
    """' (the script's 100 read as batches: every one of the job's 15 optimizer steps so far took 4 batches)' when the
    job's counts showed the script gave its steps per epoch in batches (contracts.epoch_length), else ''."""
    if evidence.steps_per_epoch_unit != BATCHES or evidence.steps_per_epoch_stated is None:
        return ""
    why = f": {evidence.steps_per_epoch_reading}" if evidence.steps_per_epoch_reading else ""
    return f" (the script's {evidence.steps_per_epoch_stated} read as batches{why})"


def evidence_numbers(attempt: Attempt) -> str:
    evidence = attempt.evidence
    if evidence is None:
        return "no numeric evidence"
    parts = []
    for label, value in (
        ("initial gradient norm", evidence.initial_gradient_norm),
        ("initial loss", evidence.initial_loss),
        ("last finite loss", evidence.last_finite_loss),
        ("max gradient norm", evidence.max_gradient_norm),
    ):
        if value is not None:
            parts.append(f"{label} {show(value)}")
    if evidence.optimizer:
        rates = ", ".join(show(rate) for rate in evidence.learning_rates or [])
        parts.append(f"optimizer {evidence.optimizer}" + (f" at {rates}" if rates else ""))
    return ", ".join(parts) if parts else "no numeric evidence"


def resume_sentence(attempt: Attempt) -> tuple[str, bool]:
    """What the next job will do with ``attempt``'s checkpoints, and whether there are any to give it (the job's
    debugger counted the files in its checkpoint directory)."""
    job = attempt.job_name
    files = attempt.evidence.checkpoint_files if attempt.evidence is not None else None
    if files == 0:
        return (
            f" {job} left no checkpoints (its script writes none, or it stopped before the first), so the next job "
            "trains from step 0.",
            False,
        )
    if files is None:
        return (
            f" The next job gets {job}'s checkpoint directory: a script that resumes from its checkpoints continues "
            f"where {job} stopped; one that wrote none trains from step 0.",
            True,
        )
    which = "the checkpoint file" if files == 1 else f"the {files} checkpoint files"
    return (
        f" The next job gets {which} {job} left: a script that resumes from its checkpoints continues where "
        f"{job} stopped instead of from step 0.",
        True,
    )


def describe_changes(changes: Mapping[str, Change], kinds: Mapping[str, str] | None = None) -> str:
    """'adding batch norm', 'lowering lr 0.1 -> 0.05, setting activation to leaky_relu (was relu)', 'turning
    batch-norm on (0 -> 1)' (``kinds``: the hyperparameters' kinds, for the switches among them)."""
    phrases = []
    for name, change in changes.items():
        before, after = change.before, change.after
        if name == "add_batch_norm":
            phrases.append("adding batch norm" if after else "removing batch norm")
        elif name in BY_FIELD:
            phrases.append(f"setting the debugger's {BY_FIELD[name].name} to {show(after)} (was {show(before)})")
        elif (kinds or {}).get(name) == FLAG:
            phrases.append(f"turning {name} {'on' if after else 'off'} ({show(before)} -> {show(after)})")
        elif is_number(before) and is_number(after):
            verb = "lowering" if after < before else "raising"
            phrases.append(f"{verb} {name} {show(before)} -> {show(after)}")
        else:
            phrases.append(f"setting {name} to {show(after)} (was {show(before)})")
    return ", ".join(phrases)


def describe_product_changes(changes: Mapping[str, Change]) -> str:
    """'lr 0.1 -> 0.05; the debugger's robust_loss off -> generalized_cross_entropy; ClassImbalance's
    threshold_imbalance 10 -> 96.2' ('none' when the job runs the user's run_spec as written)."""
    phrases = []
    for name, change in changes.items():
        if name in BY_FIELD:
            label = f"the debugger's {BY_FIELD[name].name}"
        elif name.startswith("rule:"):
            rule, _, parameter = name.removeprefix("rule:").partition(".")
            label = f"{rule}'s {parameter}"
        else:
            label = name
        phrases.append(f"{label} {show(change.before)} -> {show(change.after)}")
    return "; ".join(phrases) or "none"


def short_action(decision: Decision, kinds: Mapping[str, str] | None = None) -> str:
    """'adding batch norm', 'lowering warmup_learning_rate to 0.05', 'turning batch-norm on': a few words for a
    notification subject."""
    if not decision.changes:
        return "ending"
    phrases = []
    for name, change in decision.changes.items():
        if name == "add_batch_norm":
            phrases.append("adding batch norm" if change.after else "removing batch norm")
        elif name in BY_FIELD:
            phrases.append(f"{BY_FIELD[name].name} {show(change.after)}")
        elif (kinds or {}).get(name) == FLAG:
            phrases.append(f"turning {name} {'on' if change.after else 'off'}")
        elif is_number(change.before) and is_number(change.after):
            verb = "lowering" if change.after < change.before else "raising"
            phrases.append(f"{verb} {name} to {show(change.after)}")
        else:
            phrases.append(f"{name} -> {show(change.after)}")
    return ", ".join(phrases)


def changes_so_far(state: WorkflowState) -> str:
    """' Changed so far: lr 50 -> 5 -> 0.5; grad-clip 0 -> 1.': every value each hyperparameter went through."""
    chains: dict[str, list[str]] = {}
    for attempt in state.attempts:
        decision = attempt.decision
        if decision is None or decision.next_action != "launch_new":
            continue
        for name, change in decision.changes.items():
            before, after = show(change.before), show(change.after)
            chain = chains.setdefault(name, [before])
            if chain[-1] != before:  # an attempt in between is no longer kept
                chain += ["...", before]
            chain.append(after)
    if not chains:
        return ""
    return f" Changed so far: {'; '.join(f'{name} ' + ' -> '.join(chain) for name, chain in chains.items())}."


def ending_settings(state: WorkflowState, closest: Attempt | None = None) -> str:
    """'Ending with lr=0.1, epochs=3.'; when an earlier job came closer to the objective than the last (``closest``,
    the one the planner planned from), its settings, which are the ones to keep."""
    last, objective = state.last_attempt, state.declared_objective()
    if closest is None or last is None or objective is None or closest.number == last.number:
        return f"Ending with {state.run_spec.summary()}."
    return (
        f"Ending; job {closest.number} came closest to the objective ({objective.metric_name} = "
        f"{show(closest.objective_value)}), with {closest.summary()}."
    )


def outcome_reason(state: WorkflowState, attempt: Attempt) -> str:
    job = attempt.job_name
    failure = f": {attempt.failure_reason.rstrip().rstrip('.')}" if attempt.failure_reason else ""
    attempts = f"{state.attempt_count} attempt{'s' if state.attempt_count != 1 else ''}"
    objective = state.declared_objective()
    if objective is None:
        met = "no objective was declared"
    else:
        met = f"{objective.metric_name} = {show(attempt.objective_value)} meets {objective.describe()}"
    reasons = {
        "completed": f"Job {job} completed with no rule issues after {attempts} and {met}; final hyperparameters: "
        f"{attempt.summary()}.",
        "objective_unmeasured": (
            f"Job {job} completed but never reported {objective.metric_name if objective else 'the metric'}: no "
            "MetricDefinitions regex matched the log and the script saved no scalar of that name. Ending; check "
            "metric_definitions or save the metric with hook.save_scalar."
        ),
        "missing_evidence": (
            f"Job {job} completed but its debugger never reported a rule status: no rule was evaluated, so the "
            "run cannot be called clean. Ending; the job's log says why its debugger did not start (a script it "
            "cannot watch unchanged is named there with the fix), and check that debug-output/ reaches the bucket."
            if not attempt.outcome_reason or "never reported a rule status" in attempt.outcome_reason
            # a rule in Error, still evaluating past the bound, or a document not the job's own: the monitor's words
            else f"{attempt.outcome_reason} Ending; look at those rules' evaluation (status details, logs)."
        ),
        "algorithm_error": (
            f"Job {job} failed in the training code, not because a rule fired{failure}. "
            "Other hyperparameters would not fix that; ending."
        ),
        "capacity_error": (
            f"Job {job} got no {state.run_spec.instance_type} capacity after {state.history.capacity_retries} "
            f"retries{failure}. Ending; try another instance type or region."
        ),
        "stopped": f"Job {job} was stopped outside the workflow{failure}; ending.",
        "max_runtime_exceeded": f"Job {job} reached its MaxRuntimeInSeconds{failure}; ending.",
        "failed": f"Job {job} failed{failure}; ending.",
        "monitor_limit": (
            f"Job {job} was still running after {state.history.num_monitor_transitions} monitor transitions "
            f"(max_monitor_transitions={state.max_monitor_transitions}); ending."
        ),
    }
    return reasons[attempt.outcome]
