"""The loop's guardrails hold within Step Functions' real limits: an execution's history (25,000 events) and its
timeout (TimeoutSeconds in the ASL). Inputs whose worst case breaks either are refused, naming the field."""

from __future__ import annotations

import pytest

from contracts import run_spec as bounds
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.state.validation_messages import InvalidExecutionInput


def worst_case_history_events(max_num_retraining: int, max_monitor_transitions: int) -> int:
    """Every launch the budget allows (max_num_retraining counts them all, capacity relaunches included) and every
    monitor pass the guardrail allows."""
    attempts = max(1, max_num_retraining)
    return (
        bounds.HISTORY_EVENTS_OUTSIDE_THE_LOOP
        + attempts * bounds.HISTORY_EVENTS_PER_ATTEMPT
        + (max_monitor_transitions + bounds.MONITOR_PASSES_PAST_THE_GUARDRAIL) * bounds.HISTORY_EVENTS_PER_MONITOR_PASS
    )


def test_max_monitor_transitions_whose_history_exceeds_the_event_limit_is_refused(account_input):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "max_monitor_transitions": 5000, "monitor_interval_seconds": 1})
    problem = caught.value.problems["max_monitor_transitions"]
    assert "25,000" in problem and "history" in problem
    allowed = bounds.max_monitor_transitions_allowed(7, 1)  # max_num_retraining's default
    assert f"at most {allowed}" in problem
    # ... and the largest value it names is accepted, and holds.
    state = initial_state({**account_input, "max_monitor_transitions": allowed, "monitor_interval_seconds": 1})
    assert worst_case_history_events(state.max_num_retraining, state.max_monitor_transitions) <= bounds.HISTORY_EVENT_LIMIT


def test_a_worst_case_longer_than_the_execution_timeout_is_refused(account_input):
    """720 passes of the 10-minute fallback would be 120 hours: the 48-hour execution times out before the guardrail
    could ever fire."""
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "max_monitor_transitions": 720, "monitor_interval_seconds": 600})
    problem = caught.value.problems["max_monitor_transitions"]
    assert "48 h" in problem and "monitor_interval_seconds=600" in problem
    assert f"at most {bounds.max_monitor_transitions_allowed(7, 600)}" in problem


@pytest.mark.parametrize("interval", [1, 10, 60, 600, 3600])
def test_the_default_guardrail_fits_both_limits_for_any_interval(account_input, interval):
    state = initial_state({**account_input, "monitor_interval_seconds": interval})
    assert state.max_monitor_transitions >= 1
    assert worst_case_history_events(state.max_num_retraining, state.max_monitor_transitions) <= (
        bounds.HISTORY_EVENT_LIMIT - bounds.HISTORY_EVENTS_RESERVE
    )
    assert (state.max_monitor_transitions + bounds.MONITOR_PASSES_PAST_THE_GUARDRAIL) * interval <= (
        bounds.EXECUTION_TIMEOUT_SECONDS - bounds.EXECUTION_TIME_RESERVE_SECONDS
    )


def test_a_job_may_not_ask_for_more_time_than_the_execution_has(account_input):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "max_run_seconds": 3 * 24 * 3600})
    problem = caught.value.problems["max_run_seconds"]
    assert f"must be <= {bounds.MAX_RUN_SECONDS.high}" in problem


def test_the_fallback_interval_is_at_least_a_second(account_input):
    """It is the wait task's TimeoutSecondsPath, which Step Functions wants positive."""
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "monitor_interval_seconds": 0})
    assert "must be >= 1" in caught.value.problems["monitor_interval_seconds"]
