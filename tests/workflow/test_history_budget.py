"""The figures the guardrails are bounded with (contracts.run_spec) are the ASL's own, and a real history (moto's
interpreter running the ASL) has exactly the events the count predicts."""

from __future__ import annotations

import json

from workflow_harness import ASL_PATH, BASE_INPUT, completed, failed, issues_found, running

from contracts import history_budget
from contracts import run_spec as bounds

DEFINITION = json.loads(ASL_PATH.read_text())


def entered_states(history: list[dict]) -> list[str]:
    return [event["stateEnteredEventDetails"]["name"] for event in history if "stateEnteredEventDetails" in event]


def predicted_events(history: list[dict]) -> int:
    states = DEFINITION["States"]
    return history_budget.EXECUTION_EVENTS + sum(
        history_budget.state_events(states[name]) for name in entered_states(history)
    )


def test_the_bounds_use_the_figures_counted_from_the_asl():
    costs = history_budget.loop_costs(DEFINITION)
    assert costs.events_per_monitor_pass == bounds.HISTORY_EVENTS_PER_MONITOR_PASS == 13
    assert costs.events_per_attempt == bounds.HISTORY_EVENTS_PER_ATTEMPT == 12
    assert costs.events_outside_the_loop == bounds.HISTORY_EVENTS_OUTSIDE_THE_LOOP == 15
    assert DEFINITION["TimeoutSeconds"] == bounds.EXECUTION_TIMEOUT_SECONDS


def test_a_real_history_has_exactly_the_events_the_asl_count_predicts(workflow):
    workflow.script(
        [running(), issues_found("ExplodingTensor", step=2)],
        [failed("CapacityError: Unable to provision requested ML compute capacity.")],
        [running(), completed()],
    )
    execution = workflow.run(BASE_INPUT)
    assert execution.status == "SUCCEEDED", execution.cause
    history = workflow.history()
    assert len(history) == predicted_events(history)
    # three launches (one a capacity relaunch), and at least a monitor pass per job state the script went through
    # (five); a loaded machine may add fallback passes while a job is still running, which the count above prices
    # in like any other: a run of five fast-suite runs beside `make test` saw six once
    assert entered_states(history).count("Train") == 3 and entered_states(history).count("Monitor") >= 5


def test_the_guardrail_run_stays_within_the_bound_it_was_accepted_with(workflow):
    """A job that never ends: every pass waits out the fallback until max_monitor_transitions; the whole history
    is no longer than the worst case the input was checked against."""
    workflow.script([running()])
    limit = 3
    execution = workflow.run({**BASE_INPUT, "max_monitor_transitions": limit, "max_num_retraining": 0})
    assert execution.status == "FAILED" and execution.error == "MonitorLimitReached"
    history = workflow.history()
    assert len(history) == predicted_events(history)
    worst_case = (
        bounds.HISTORY_EVENTS_OUTSIDE_THE_LOOP
        + 1 * bounds.HISTORY_EVENTS_PER_ATTEMPT  # max_num_retraining 0 still allows the first launch
        + (limit + bounds.MONITOR_PASSES_PAST_THE_GUARDRAIL) * bounds.HISTORY_EVENTS_PER_MONITOR_PASS
    )
    assert len(history) <= worst_case
    # the sample's meaning: max_monitor_transitions passes are allowed, the next one ends the run
    assert entered_states(history).count("Monitor") == limit + 1


def test_the_new_waits_cost_no_more_than_the_bounds_count():
    """A look at rules still evaluating (WaitForRules, Monitor, AfterMonitor) is a monitor pass, counted in
    num_monitor_transitions, and costs fewer events than one; a relaunch after a capacity shortage
    (WaitBeforeRelaunch, Train) costs fewer than an attempt's Train, Plan and AfterPlan."""
    rule_wait = history_budget.path_events(DEFINITION, ("AfterMonitor", "WaitForRules", "Monitor")) - history_budget.state_events(DEFINITION["States"]["AfterMonitor"])
    assert rule_wait + history_budget.state_events(DEFINITION["States"]["AfterMonitor"]) <= bounds.HISTORY_EVENTS_PER_MONITOR_PASS
    relaunch = history_budget.path_events(DEFINITION, ("WaitBeforeRelaunch", "Train"))
    assert relaunch <= bounds.HISTORY_EVENTS_PER_ATTEMPT
    assert history_budget.path_events(DEFINITION, ("AfterMonitor", "WaitBeforeRelaunch")) > 0
