"""The notification topic, encrypted with a customer-managed KMS key."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct


class NotificationTopic(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, notification_email: str | None = None) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.key = kms.Key(
            self,
            "TopicKey",
            description="Encrypts the training remediation notification topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
            pending_window=Duration.days(30),
        )
        # CloudWatch alarms publish to the encrypted topic: the key must let the service encrypt for it.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],  # in a key policy "*" means this key
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            )
        )
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name="Training remediation",
            master_key=self.key,
            enforce_ssl=True,
        )
        if notification_email:
            if "@" not in notification_email or notification_email.strip() != notification_email:
                raise ValueError(
                    f"notification_email: {notification_email!r} is not an e-mail address; "
                    "pass -c notification_email=you@example.com or leave it unset"
                )
            self.topic.add_subscription(subscriptions.EmailSubscription(notification_email))

    def grant_encrypted_publish(self, grantee: iam.IGrantable) -> None:
        """sns:Publish on this topic only, and the two KMS actions publishing to an SSE-KMS topic needs on its key."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(sid="PublishNotifications", actions=["sns:Publish"], resources=[self.topic.topic_arn])
        )
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                sid="EncryptNotifications",
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=[self.key.key_arn],
            )
        )
