"""The alarms that notify the topic when something goes wrong that no one would otherwise see; expected ends are
not alarms.

* ``UndeliveredEvents``: a message in the dead-letter queue (an event EventBridge could not deliver, or a cleanup
  or job-events invocation that failed on every try).
* ``LambdaErrors``: an exception a handler raised that is neither a transient fault handed back for a retry nor an
  expected refusal (the handlers count it themselves as it happens, ``UnhandledErrors``: in the period it happened,
  however long the invocation ran), or a Lambda that ran out of time (Lambda's own "Task timed out" line in the
  function's log, counted by a metric filter: a handler cannot count its own timeout).
* ``LambdaThrottles``: a Lambda invocation refused for want of concurrency (the state machine and EventBridge retry
  it, but a run that keeps meeting throttles is one step from failing).
* ``WorkflowErrors``: an execution that ended otherwise than by an expected end or a deliberate stop, whatever state
  it ended in (the execution-cleanup Lambda, which every FAILED, TIMED_OUT and ABORTED end reaches, counts it:
  ``UnexpectedWorkflowErrors``), or a notification SNS kept refusing (``NotificationsNotSent``: the step went on
  without it); giving up after the remedies, the budget or a guardrail is a normal end, notified on the topic like
  every step, not an alarm, and so is `remediate cloud stop` (Error UserStop) or the stack's delete (StackDeleted).
* ``ExecutionsTimedOut``: Step Functions' own count, beside the cleanup's: Step Functions delivers status-change
  events best effort, and a timeout is never expected.

CloudWatch publishes to the encrypted topic as cloudwatch.amazonaws.com: the topic and key policies allow these
alarms only (infra/notifications.py).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.notifications import NotificationTopic
from lambdas.remediation.state.end_causes import (
    NOTIFICATIONS_NOT_SENT,
    UNEXPECTED_WORKFLOW_ERRORS,
    UNHANDLED_ERRORS,
)

PERIOD = Duration.minutes(5)
#: What Lambda writes to a function's log when an invocation runs out of time (its platform line, not the handler's).
TIMED_OUT_LINE = "Task timed out after"
LAMBDA_TIMEOUTS = "LambdaTimeouts"


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

        for function in functions:
            logs.MetricFilter(
                self,
                f"{function.node.id}TimedOut",
                log_group=function.log_group,
                metric_namespace=metrics_namespace,
                metric_name=LAMBDA_TIMEOUTS,
                filter_pattern=logs.FilterPattern.literal(f'"{TIMED_OUT_LINE}"'),
                metric_value="1",
            )
        timeouts = cloudwatch.Metric(
            namespace=metrics_namespace, metric_name=LAMBDA_TIMEOUTS, period=PERIOD, statistic="Sum"
        )
        throttles = {
            f"t{index}": function.metric_throttles(period=PERIOD, statistic="Sum") for index, function in enumerate(functions)
        }
        self.alarms = [
            self._alarm(
                "UndeliveredEvents",
                "An event or asynchronous invocation of the remediation workflow failed on every try (dead-letter queue)",
                dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
            ),
            self._alarm(
                "LambdaErrors",
                "A remediation Lambda raised an error that is not a transient fault or an expected refusal, or timed out",
                cloudwatch.MathExpression(
                    expression="FILL(unhandled, 0) + FILL(timeouts, 0)",
                    using_metrics={"unhandled": handlers_metric(UNHANDLED_ERRORS), "timeouts": timeouts},
                    label="Unhandled errors the handlers counted, and Lambda timeouts",
                    period=PERIOD,
                ),
            ),
            self._alarm(
                "LambdaThrottles",
                "A remediation Lambda invocation was throttled (retried, but concurrency is short)",
                cloudwatch.MathExpression(
                    expression=" + ".join(f"FILL({name}, 0)" for name in throttles),
                    using_metrics=throttles,
                    label="Lambda throttles",
                    period=PERIOD,
                ),
            ),
            self._alarm(
                "WorkflowErrors",
                "A remediation execution ended otherwise than by an expected end or a deliberate stop, or a notification "
                "could not be sent",
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
