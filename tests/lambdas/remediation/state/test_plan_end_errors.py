from typing import get_args

from lambdas.plan_handler import END_ERRORS, end_error
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.state.attempts import EndCause


def test_every_end_cause_has_an_error_name():
    assert set(END_ERRORS) == set(get_args(EndCause))


def test_the_error_name_follows_the_planners_end_cause(account_input, record):
    planned = plan(record(initial_state({**account_input, "max_num_retraining": 0})))
    assert planned.last_attempt.decision.end_cause == "budget_spent"
    assert end_error(planned) == "RemediationBudgetExhausted"
