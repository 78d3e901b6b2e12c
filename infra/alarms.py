"""The alarms that notify the topic when something goes wrong that no one would otherwise see; expected ends are
not alarms.

* ``UndeliveredEvents``: a message in the dead-letter queue (an event EventBridge could not deliver, or a cleanup
  or job-events invocation that failed on every try).
* ``LambdaErrors``: a Lambda error that is not a transient fault handed back to the state machine for a retry
  (the handlers count those themselves, ``TransientFaultsDeferred``): an unhandled exception or a timeout.
* ``WorkflowErrors``: an execution that failed for an unexpected reason (the monitor's HandleFailure counts them,
  ``UnexpectedWorkflowErrors``), or a notification SNS kept refusing (``NotificationsNotSent``: the step went on
  without it); giving up after the remedies, the budget or a guardrail is a normal end, notified on the topic like
  every step, not an alarm.
* ``ExecutionsAborted`` and ``ExecutionsTimedOut``: an execution that ended without its own cleanup.

CloudWatch publishes to the encrypted topic as cloudwatch.amazonaws.com: the topic and key policies allow these
alarms only (infra/notifications.py).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.notifications import NotificationTopic
from lambdas.remediation.state.end_causes import (
    NOTIFICATIONS_NOT_SENT,
    TRANSIENT_FAULTS_DEFERRED,
    UNEXPECTED_WORKFLOW_ERRORS,
)

PERIOD = Duration.minutes(5)


class OperationsAlarms(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        state_machine: sfn.StateMachine,
        functions: tuple[lambda_.Function, ...],
        dead_letter_queue: sqs.IQueue,
        notifications: NotificationTopic,
        metrics_namespace: str,
        service_name: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = notifications.topic

        def handlers_metric(name: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=metrics_namespace,
                metric_name=name,
                dimensions_map={"service": service_name},
                period=PERIOD,
                statistic="Sum",
            )

        errors = {f"e{index}": function.metric_errors(period=PERIOD, statistic="Sum") for index, function in enumerate(functions)}
        unexpected_errors = cloudwatch.MathExpression(
            expression=f"({' + '.join(f'FILL({name}, 0)' for name in errors)}) - FILL(deferred, 0)",
            using_metrics={**errors, "deferred": handlers_metric(TRANSIENT_FAULTS_DEFERRED)},
            label="Lambda errors that are not transient faults handed back for a retry",
            period=PERIOD,
        )
        self.alarms = [
            self._alarm(
                "UndeliveredEvents",
                "An event or asynchronous invocation of the remediation workflow failed on every try (dead-letter queue)",
                dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
            ),
            self._alarm(
                "LambdaErrors", "A remediation Lambda failed (not a transient fault the workflow retries)", unexpected_errors
            ),
            self._alarm(
                "WorkflowErrors",
                "A remediation execution failed for an unexpected reason, or a notification could not be sent",
                cloudwatch.MathExpression(
                    expression="FILL(unexpected, 0) + FILL(unsent, 0)",
                    using_metrics={
                        "unexpected": handlers_metric(UNEXPECTED_WORKFLOW_ERRORS),
                        "unsent": handlers_metric(NOTIFICATIONS_NOT_SENT),
                    },
                    label="Unexpected workflow errors and notifications not sent",
                    period=PERIOD,
                ),
            ),
            self._alarm(
                "ExecutionsAborted",
                "A remediation execution was stopped (its cleanup stops the job it left)",
                state_machine.metric_aborted(period=PERIOD, statistic="Sum"),
            ),
            self._alarm(
                "ExecutionsTimedOut",
                "A remediation execution timed out (its cleanup stops the job it left)",
                state_machine.metric_timed_out(period=PERIOD, statistic="Sum"),
            ),
        ]
        notifications.allow_cloudwatch_alarms([self.alarm_arn(alarm) for alarm in self.alarms])

    def alarm_arn(self, alarm: cloudwatch.Alarm) -> str:
        """The alarm's ARN from its (fixed) name, so policies can name it without referencing the alarm."""
        return Stack.of(self).format_arn(
            service="cloudwatch",
            resource="alarm",
            resource_name=self._alarm_name(alarm.node.id),
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def _alarm_name(self, construct_id: str) -> str:
        return f"{Stack.of(self).stack_name}-{construct_id}"

    def _alarm(self, construct_id: str, description: str, metric: cloudwatch.IMetric) -> cloudwatch.Alarm:
        """One or more in five minutes notifies the topic; named <stack>-<what>."""
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            alarm_name=self._alarm_name(construct_id),
            alarm_description=description,
            metric=metric,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.topic))
        return alarm
