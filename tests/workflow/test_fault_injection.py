"""The fault-injection run (issue 23): whole executions of the real state machine under randomised fault schedules
(fault_scenarios.py, by seed) and at every place an execution can be stopped; after each, the product's promises
hold (fault_harness.check_invariants). A bounded number here; bench/fault_injection.py runs as many as asked."""

from __future__ import annotations

import pytest
from fault_scenarios import ABORT_POINTS, draw, run_drawn
from workflow_harness import BASE_INPUT, FUNCTION_ARNS, completed

#: Seeds `make test` runs (each a few seconds); the bench draws from 0 upwards.
SEEDS = range(1000, 1008)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_randomised_fault_schedule_breaks_no_promise(workflow, faults, seed):
    outcome = run_drawn(workflow, faults, draw(seed))
    assert outcome.violations == [], outcome.line()


@pytest.mark.parametrize(("function", "moment", "occurrence"), ABORT_POINTS)
def test_an_execution_stopped_anywhere_leaves_no_job_running(workflow, faults, function, moment, occurrence):
    """Two attempts (the first explodes, the second is healthy), stopped at one handler moment; no fault else."""
    drawn = draw(0, abort_share=0.0)
    drawn.stories, drawn.fault_rate, drawn.late_seconds, drawn.duplicate, drawn.reorder = (
        ["explodes", "healthy"], 0.0, 0.0, False, False,
    )  # fmt: skip
    drawn.abort = (function, moment, occurrence)
    drawn.execution_input = {**BASE_INPUT, "max_num_retraining": 3}
    outcome = run_drawn(workflow, faults, drawn)
    assert outcome.violations == [], outcome.line()


def test_a_handler_that_runs_before_start_execution_returns_knows_its_execution(workflow, monkeypatch):
    """The first Lambda (Initialize) can run before the test's thread is back from StartExecution (a loaded machine
    did it once: the fault harness's abort at that Lambda then asked DescribeExecution for None). Forced here."""
    import threading

    workflow.script([completed()])
    first_ran, seen = threading.Event(), []
    plan = workflow.dispatch.lambda_functions()["remediation-plan"]

    def plan_noting_the_execution(event, context):
        if not first_ran.is_set():
            seen.append(workflow.execution_arn)
            first_ran.set()
        return plan(event, context)

    workflow.dispatch.register_lambda_function(FUNCTION_ARNS["PlanFunctionArn"], plan_noting_the_execution)
    start_execution = workflow.sfn.start_execution

    def start_then_lag(**kwargs):
        started = start_execution(**kwargs)
        assert first_ran.wait(300), "the execution never ran its first Lambda"
        return started

    monkeypatch.setattr(workflow.sfn, "start_execution", start_then_lag)
    arn = workflow.start(BASE_INPUT)
    assert workflow.wait(arn)["status"] == "SUCCEEDED"
    assert seen == [arn]
