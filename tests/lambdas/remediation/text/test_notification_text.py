"""What subscribers read (``lambdas.remediation.text.notifications``): each event's subject and summary, whole. A
relaunch's or an end's summary is the decision's reason (its words: planning/test_reasons.py); a launch's and a
workflow error's are the notification's own. The SNS request's shape and delivery: test_notifications_publish.py."""

from __future__ import annotations

import json

from contracts.job import killed_process_failure_text
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.text.notifications import completed, gave_up, issues_found, job_launched, workflow_error
from tests.lambdas.remediation.recorded_runs import finish, quiet_miss, recorded, start


def said(notification) -> tuple[str, str]:
    return notification.subject, notification.body["summary"]


# --------------------------------------------------------------------------- launches


def test_the_first_launch_lists_what_the_job_runs(reference_state):
    assert said(job_launched(reference_state.with_new_attempt("remediation-resnet-1"))) == (
        "[remediation] Attempt 1/7 launched: warmup_learning_rate=0.1, learning_rate=0.1 (+12 more)",
        (
            "Launched training job remediation-resnet-1 (attempt 1/7) with warmup_learning_rate=0.1, learning_rate=0.1, "
            "add_batch_norm=false, num_epochs=2, activation=elu, batch_size=128, grad_clip=0, weight_decay=0.0001, "
            "dropout=0, init_scale=1, class_weighting=none, early_stopping_patience=0, normalize_inputs=true, "
            "num_workers=0."
        ),
    )


def test_a_relaunch_lists_every_change_the_product_made_to_the_users_run_spec(account_input):
    _, planned, _ = quiet_miss("mlp-noisy-labels-robust-in-job", account_input, allow_loss_changes=True)
    assert said(job_launched(planned.with_new_attempt("remediation-job-70cf617e3e-002"))) == (
        "[remediation] Attempt 2/10 launched: lr=0.05, epochs=12, hidden=32, depth=1",
        (
            "Launched training job remediation-job-70cf617e3e-002 (attempt 2/10) with lr=0.05, epochs=12, hidden=32, "
            "depth=1. Changed by the product from your run_spec: the debugger's robust_loss off -> "
            "generalized_cross_entropy."
        ),
    )


# --------------------------------------------------------------------------- relaunches


def test_a_missed_objective_relaunch_names_the_metric_and_the_change(account_input):
    _, planned, decision = quiet_miss("mlp-noisy-labels-robust-in-job", account_input, allow_loss_changes=True)
    assert said(issues_found(planned)) == (
        "[remediation] Objective missed (validation:accuracy 0.7056 (>= 0.9)): robust_loss generalized_cr...",
        decision.reason,
    )


def test_a_job_stopped_out_of_reach_names_the_step(account_input):
    run = recorded("logline-raw-inputs-out-of-reach")
    planned = plan(finish(start(run, account_input), run["jobs"][0]))
    assert said(issues_found(planned)) == (
        "[remediation] Objective out of reach (validation:accuracy 0.5283 (>= 0.8)) at step 194: turning ...",
        planned.last_attempt.decision.reason,
    )


def test_out_of_memory_says_so_and_what_is_lowered(reference_state, record):
    failure = killed_process_failure_text("SIGKILL", 9, "3.1 GiB")
    planned = plan(record(reference_state, outcome="out_of_memory", failure_reason=failure))
    assert said(issues_found(planned)) == (
        "[remediation] Out of memory: lowering warmup_learning_rate to 0.05, lowering learning_rate to 0....",
        planned.last_attempt.decision.reason,
    )


# --------------------------------------------------------------------------- ends


def test_gave_up_on_the_stacks_instance_hours(reference_state, record):
    stopped = record(reference_state.updated(max_instance_seconds=7200))
    planned = plan(stopped.updated(history={**stopped.history.model_dump(), "instance_seconds_used": 7190}))
    assert said(gave_up(planned)) == (
        "[remediation] Gave up after 1 attempt: the stack's instance-hours guardrail is spent",
        planned.end_reason,
    )


def test_gave_up_on_bad_data(reference_state, record):
    failure = "AlgorithmError: IndexError: Target 12 is out of bounds."
    planned = plan(record(reference_state, outcome="data_error", failure_reason=failure))
    assert said(gave_up(planned)) == (
        "[remediation] Gave up after 1 attempt: the data is wrong, not remediable",
        planned.end_reason,
    )


def test_gave_up_on_a_missed_objective_with_no_remedy_left(account_input):
    run = recorded("mlp-rare-class-weighted-in-job")
    planned = plan(finish(start(run, account_input), run["jobs"][0]))
    assert said(gave_up(planned)) == (
        "[remediation] Gave up after 1 attempt: objective missed, no remedy left",
        planned.end_reason,
    )


def test_gave_up_on_a_missed_objective_with_the_budget_spent(account_input):
    run = recorded("mlp-noisy-labels-small")
    planned = plan(finish(start(run, account_input, max_num_retraining=1), run["jobs"][0]))
    assert said(gave_up(planned)) == (
        "[remediation] Gave up after 1 attempt: objective missed, relaunch budget spent",
        planned.end_reason,
    )


def test_gave_up_on_a_job_out_of_time_with_no_launch_left(account_input, record):
    planned = plan(record(initial_state({**account_input, "max_num_retraining": 0}), outcome="max_runtime_exceeded"))
    assert said(gave_up(planned)) == (
        "[remediation] Gave up after 1 attempt: the job reached its MaxRuntimeInSeconds, no launch left t...",
        planned.end_reason,
    )


def test_gave_up_on_rules_that_never_reported(reference_state, record):
    planned = plan(record(reference_state, outcome="missing_evidence"))
    assert said(gave_up(planned)) == (
        "[remediation] Gave up after 1 attempt: the job's rules never reported",
        planned.end_reason,
    )


def test_gave_up_out_of_memory_with_no_remedy(account_input, record):
    state = initial_state({**account_input, "policy": "anchor"})
    planned = plan(record(state, outcome="out_of_memory", failure_reason="OutOfMemoryError: killed"))
    assert said(gave_up(planned)) == (
        "[remediation] Gave up after 1 attempt: out of memory, no remedy left",
        planned.end_reason,
    )


# --------------------------------------------------------------------------- workflow errors


def test_a_lambdas_error_is_told_with_its_message():
    cause = json.dumps({"errorType": "InvalidState", "errorMessage": "invalid state payload: state.next_action: bad"})
    assert said(workflow_error("States.TaskFailed", cause)) == (
        "[remediation] Workflow error: States.TaskFailed: invalid state payload: state.next_action: bad",
        "The workflow failed with States.TaskFailed: invalid state payload: state.next_action: bad",
    )


def test_an_error_without_a_cause_is_told_by_its_name():
    assert said(workflow_error("States.Timeout")) == (
        "[remediation] Workflow error: States.Timeout",
        "The workflow failed with States.Timeout",
    )


# --------------------------------------------------------------------------- rules that could not judge

NO_EPOCHS_SENTENCE = (
    "In job remediation-job-5434bf7c55-001, ObjectiveOutOfReach could not judge: no planned epochs: the run_spec "
    "states no epoch count (a hyperparameter named num_epochs, epochs, n_epochs, max_epochs, num_train_epochs, or the "
    "one hyperparameter_names maps as num_epochs)."
)


def test_a_completed_run_says_which_rules_could_not_judge_its_job_and_why(account_input):
    """A real job whose run_spec leaves its epochs to the script: ObjectiveOutOfReach's quiet status is no verdict."""
    run = recorded("mlp-declared-epochs-left-to-the-script")
    state = finish(start(run, account_input), run["jobs"][0])
    ended = plan(state)
    notification = completed(ended)
    assert notification.body["summary"] == f"{ended.end_reason} {NO_EPOCHS_SENTENCE}"
    assert notification.body["not_judged"] == [
        {"rule": "ObjectiveOutOfReach", "why": run["jobs"][0]["rule_status"]["rules"][3]["not_judged"]}
    ]
    assert notification.body["attempts"][0]["not_judged"] == notification.body["not_judged"]


def test_a_run_that_missed_its_objective_says_which_rules_could_not_judge_its_job(account_input):
    """The same real job against a target it missed (its declared remedy, the rate halved, answers no missed objective)."""
    run = recorded("mlp-declared-epochs-left-to-the-script")
    objective = {**run["run_spec"]["objective"], "target_value": 0.99}
    state = finish(start(run, account_input, objective=objective, max_num_retraining=1), run["jobs"][0])
    assert state.last_attempt.outcome == "objective_missed"
    ended = plan(state)
    notification = gave_up(ended)
    assert notification.subject == "[remediation] Gave up after 1 attempt: objective missed, no remedy left"
    assert notification.body["summary"] == f"{ended.end_reason} {NO_EPOCHS_SENTENCE}"
    assert [item["rule"] for item in notification.body["not_judged"]] == ["ObjectiveOutOfReach"]


def test_a_run_whose_rules_all_judged_says_nothing_more(account_input):
    run = recorded("mlp-rare-class-weighted-in-job")
    ended = plan(finish(start(run, account_input), run["jobs"][0]))
    assert gave_up(ended).body["summary"] == ended.end_reason and gave_up(ended).body["not_judged"] == []


def test_a_stopped_job_is_told_at_its_optimizer_step_with_the_saved_global_step(reference_state, record):
    """The issue's optimizer step (contracts.rule_status.RuleIssue.optimizer_step), which the saved data numbers as
    global step 9 (two evaluation passes before it): the subject and the planner's headline name the user's step."""
    recorded = record(reference_state, step=9)
    issue = {**recorded.last_attempt.issue.model_dump(), "optimizer_step": 7}
    planned = plan(recorded.with_last_attempt(issue=issue))
    subject, summary = said(issues_found(planned))
    assert subject.startswith("[remediation] ExplodingTensor at step 7 (saved as global step 9): ")
    assert "ExplodingTensor fired at step 7 (saved as global step 9) (warmup phase" in summary
    older = plan(record(reference_state, step=9))  # an issue without the optimizer step reads as before
    assert said(issues_found(older))[0].startswith("[remediation] ExplodingTensor at step 9: ")
