"""The EventBridge rules of the event-driven loop, and the grants that name the state machine.

* JobStateChange: our training jobs (the stack's prefix) reaching a final status -> the job-events Lambda, which
  completes the workflow's wait with SendTaskSuccess (on this state machine only).
* ExecutionEnded: this state machine's executions ending TIMED_OUT, ABORTED or FAILED -> the execution-cleanup
  Lambda, which reads the execution's history (GetExecutionHistory on this state machine's executions only), stops
  the job it left, and notifies and alarms an end no one expected, whatever state it happened in.

An event neither target could take after EventBridge's retries goes to the dead-letter queue (infra/dead_letters.py,
alarmed). The train Lambda may DescribeExecution this state machine's executions: once its job exists it checks
that its execution still runs, and stops the job if not. The plan Lambda may ListExecutions of this state machine:
Initialize counts the running ones against the stack's max_concurrent_executions.

The patterns come from ``lambdas.remediation.job.job_events`` (the local runtime matches the same ones).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.nag import account_scoped_arn_prefix, acknowledge, attribute_placeholder
from lambdas.remediation.job import job_events

#: EventBridge retries a Lambda target's failed delivery; an event older than this is of no use to a 48 h loop.
MAX_EVENT_AGE = Duration.hours(2)


class LoopEvents(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.StateMachine,
        job_events_function: lambda_.Function,
        execution_cleanup_function: lambda_.Function,
        train_function: lambda_.Function,
        plan_function: lambda_.Function,
        job_name_prefix: str,
        dead_letter_queue: sqs.IQueue,
    ) -> None:
        super().__init__(scope, construct_id)
        self.job_state_change = events.Rule(
            self,
            "JobStateChange",
            description="A training job of this stack reached a final status: end the workflow's wait for it",
            event_pattern=_pattern(job_events.training_job_state_change_pattern(job_name_prefix)),
            targets=[
                targets.LambdaFunction(
                    job_events_function,
                    retry_attempts=4,
                    max_event_age=MAX_EVENT_AGE,
                    dead_letter_queue=dead_letter_queue,
                )
            ],
        )
        self.execution_ended = events.Rule(
            self,
            "ExecutionEnded",
            description="A remediation execution timed out, was aborted or failed: stop the job it left",
            event_pattern=_pattern(job_events.execution_status_change_pattern(state_machine.state_machine_arn)),
            targets=[
                targets.LambdaFunction(
                    execution_cleanup_function,
                    retry_attempts=4,
                    max_event_age=MAX_EVENT_AGE,
                    dead_letter_queue=dead_letter_queue,
                )
            ],
        )
        # A policy of its own, not the role's default one: the function's default policy is a dependency of the
        # function, which the state machine's definition names (a reference back would be a circular dependency).
        iam.Policy(
            self,
            "JobEventsEndWaits",
            roles=[job_events_function.role],
            statements=[
                iam.PolicyStatement(
                    sid="EndWaitsOfThisStateMachine",
                    actions=["states:SendTaskSuccess"],
                    resources=[state_machine.state_machine_arn],
                )
            ],
        )
        executions = Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        execution_cleanup_function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadHistoryOfThisStateMachinesExecutions",
                actions=["states:GetExecutionHistory"],
                resources=[executions],
            )
        )
        # A policy of its own (the state machine's definition names the train function, as for job-events).
        train_checks = iam.Policy(
            self,
            "TrainChecksItsExecution",
            roles=[train_function.role],
            statements=[
                iam.PolicyStatement(
                    sid="SeeWhetherTheExecutionStillRuns",
                    actions=["states:DescribeExecution"],
                    resources=[executions],
                )
            ],
        )
        # A policy of its own (the definition names the plan function too): Initialize counts the running executions
        # against the stack's max_concurrent_executions (lambdas/remediation/job/running_executions.py).
        iam.Policy(
            self,
            "PlanCountsRunningExecutions",
            roles=[plan_function.role],
            statements=[
                iam.PolicyStatement(
                    sid="ListThisStateMachinesExecutions",
                    actions=["states:ListExecutions"],
                    resources=[state_machine.state_machine_arn],
                )
            ],
        )
        executions_finding = (
            f"AwsSolutions-IAM5[Resource::{account_scoped_arn_prefix(self, 'states')}execution:"
            f"{attribute_placeholder(state_machine.node.default_child, 'Name')}:*]"
        )
        for scope in (execution_cleanup_function.role, train_checks):
            acknowledge(
                scope,
                executions_finding,
                "Executions are named at start; this state machine's execution ARNs are their scope.",
            )


def _pattern(pattern: dict) -> events.EventPattern:
    """EventBridge's pattern JSON as CDK's EventPattern (detail-type is spelled detail_type there)."""
    return events.EventPattern(
        source=pattern["source"], detail_type=pattern["detail-type"], detail=pattern["detail"]
    )
