"""Where the events and asynchronous invocations nobody could handle go: one dead-letter queue, watched by an alarm
(infra/alarms.py), so a failed cleanup or a lost job state change is never silent.

Two sources write to it: the EventBridge rules' targets (an event EventBridge could not deliver after its retries)
and the asynchronously invoked Lambdas' on-failure destination (an event whose handler failed on every try: the
execution-cleanup Lambda that could not stop a job, the job-events Lambda that could not end a wait).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge

#: As long as SQS keeps a message: time for someone to read what failed after the alarm.
RETENTION = Duration.days(14)


class DeadLetters(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=RETENTION,
            # Kept when the stack is deleted: what failed on every try is the evidence someone still has to read.
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.queue,
            "AwsSolutions-SQS3",
            "It is the dead-letter queue itself: of the EventBridge targets and of the Lambdas' asynchronous invocations.",
        )
