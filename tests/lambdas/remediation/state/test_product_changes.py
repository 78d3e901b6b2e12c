"""Every launch shows every change the product made to its job (``lambdas.remediation.state.product_changes``): the
hyperparameters, the debugger's loss settings and rule parameters, against the run_spec the run started with; and
the product changes the training loss only with the user's consent."""

from __future__ import annotations

from lambdas.remediation.planning.planner import plan
from lambdas.remediation.state.product_changes import product_changes
from lambdas.remediation.text.notifications import job_launched
from tests.lambdas.remediation.recorded_runs import finish, recorded, start


def launched(state, job_name: str):
    return state.with_new_attempt(job_name)


def test_a_launch_lists_the_debuggers_loss_setting_the_product_turned_on(account_input):
    """Noisy labels, the user's consent to loss changes: the next job runs the script's own hyperparameters and the
    debugger's robust loss, and its launch says so."""
    run = recorded("mlp-noisy-labels-robust-in-job")
    planned = plan(finish(start(run, account_input, allow_loss_changes=True), run["jobs"][0]))
    second = launched(planned, "remediation-job-second")
    assert second.last_attempt.debugger_settings == {
        "debugger_class_weighting": "off", "debugger_robust_loss": "generalized_cross_entropy"
    }
    changes = product_changes(second)
    assert {name: (change.before, change.after) for name, change in changes.items()} == {
        "debugger_robust_loss": ("off", "generalized_cross_entropy")
    }
    notification = job_launched(second)
    assert notification.body["changed_by_product"] == {
        "debugger_robust_loss": {"before": "off", "after": "generalized_cross_entropy"}
    }
    assert notification.body["summary"].endswith(
        "Changed by the product from your run_spec: the debugger's robust_loss off -> generalized_cross_entropy."
    )


def test_the_first_launch_changes_nothing(account_input):
    run = recorded("mlp-noisy-labels-robust-in-job")
    first = launched(start(run, account_input), "remediation-job-first")
    assert product_changes(first) == {}
    assert job_launched(first).body["changed_by_product"] == {}
    assert "Changed by the product" not in job_launched(first).body["summary"]


def test_without_consent_the_loss_stays_the_scripts_and_the_run_says_what_would_answer_it(account_input):
    """The same job, the run_spec silent on loss changes (the default): no job trains on a changed loss; the planner
    takes the script's own answer (smaller steps), and says the robust loss was kept out and how to allow it."""
    run = recorded("mlp-noisy-labels-robust-in-job")
    planned = plan(finish(start(run, account_input), run["jobs"][0]))
    decision = planned.last_attempt.decision
    assert decision.remedy == "SmallerStepsOnNoisyLabels"
    assert [(skip.remedy, skip.why) for skip in decision.skipped] == [("RobustLossInJob", "not_allowed")]
    assert planned.run_spec.debugger_robust_loss == "off" and "debugger_robust_loss" not in decision.changes
    second = launched(planned, "remediation-job-second")
    assert set(product_changes(second)) == {"lr"}


def test_a_rule_parameter_the_planner_moved_is_a_change_of_the_job(account_input):
    """A change to what the debugger watches counts too: keyed rule:<rule>.<parameter>."""
    from lambdas.remediation.state.attempts import Change, Decision

    run = recorded("mlp-noisy-labels-robust-in-job")
    state = finish(start(run, account_input), run["jobs"][0])
    decision = Decision(
        remedy="WeightClasses", reason="r", next_action="launch_new", cause="ClassImbalance",
        rule_changes={"ClassImbalance.threshold_imbalance": Change(before="10", after="96.2")},
    )  # fmt: skip
    state = launched(state.with_last_attempt(decision=decision), "remediation-job-second")
    assert {name: change.after for name, change in product_changes(state).items()} == {
        "rule:ClassImbalance.threshold_imbalance": "96.2"
    }
    assert "ClassImbalance's threshold_imbalance 10 -> 96.2" in job_launched(state).body["summary"]
