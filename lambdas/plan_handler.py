"""Plan Lambda: validate the execution input into the first state (action "initialize"),
or, after an attempt, prescribe the next run_spec or end with the reason."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from contracts.stack_guardrails import StackGuardrails
from lambdas.remediation import handler_support
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.job import job_identity, running_executions
from lambdas.remediation.planning import planner as policies
from lambdas.remediation.state import end_causes
from lambdas.remediation.state.payload import WorkflowState, parse_state
from lambdas.remediation.text import notifications

logger = Logger(service=handler_support.SERVICE_NAME)
metrics = Metrics(namespace=handler_support.METRICS_NAMESPACE, service=handler_support.SERVICE_NAME)
tracer = Tracer(service=handler_support.SERVICE_NAME)

#: The Error name the state machine's RemediationGaveUp state fails with, by the planner's end cause.
END_ERRORS = end_causes.END_ERRORS


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@handler_support.counting_errors(metrics)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    handler_support.begin_invocation(context)
    task = handler_support.parse_task_event(event)
    logger.append_keys(execution_name=task.execution_name)
    if task.action == "initialize":
        # InvalidExecutionInput names every bad field, and what the stack's guardrails refuse
        guardrails = StackGuardrails.from_environment(os.environ)
        state = initial_state(task.execution_input, guardrails)
        if guardrails.secret_evidence_paths:
            # this execution's secret: its jobs' evidence goes where no other run's job can find it
            state = state.updated(evidence_key=job_identity.new_evidence_key())
        if guardrails.cost is not None:
            with handler_support.transient_errors_retried("counting the running executions"):
                ahead = running_executions.check_running_executions(
                    handler_support.client("stepfunctions", running_executions.region_of(task.execution_id)),
                    task.execution_id,
                    task.execution_start_time,
                    guardrails.cost.max_concurrent_executions,
                )
            logger.info("executions running before this one", extra={"running": ahead})
        logger.info("execution input accepted", extra={"run_spec": state.run_spec.summary(), "policy": state.policy})
        return state.to_payload()

    state = parse_state({"state": task.state})
    logger.append_keys(job_name=state.history.latest_job_name)
    planned = policies.plan(state)
    decision = planned.last_attempt.decision if planned.last_attempt else None
    if planned.next_action == "launch_new":
        metrics.add_metric(name="RemediationsPlanned", unit=MetricUnit.Count, value=1)
        handler_support.publish_best_effort(notifications.issues_found(planned), metrics, logger)
        logger.info("remediation planned", extra={"remedy": decision.remedy if decision else None})
        return {**planned.to_payload(), "end_error": None}

    metrics.add_metric(name="RemediationsGivenUp", unit=MetricUnit.Count, value=1)
    handler_support.publish_best_effort(notifications.gave_up(planned), metrics, logger)
    logger.info("remediation ended", extra={"end_reason": planned.end_reason})
    return {**planned.to_payload(), "end_error": end_error(planned)}


def end_error(state: WorkflowState) -> str:
    """'RemediationBudgetExhausted', 'NoRemedyLeft', 'TrainingJobStopped', ...: why the workflow ends, as the planner decided."""
    attempt = state.last_attempt
    decision = attempt.decision if attempt else None
    if decision is None or decision.end_cause is None:
        return "RemediationEnded"
    return END_ERRORS[decision.end_cause]
