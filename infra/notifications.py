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
        self.key = kms.Key(
            self,
            "TopicKey",
            description="Encrypts the training remediation notification topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
            pending_window=Duration.days(30),
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

    def allow_cloudwatch_alarms(self, alarm_arns: list[str]) -> None:
        """Let these alarms (and no other) notify the encrypted topic.

        CloudWatch publishes as the service principal cloudwatch.amazonaws.com, so the topic policy must allow
        sns:Publish and the key policy the data-key actions SNS performs for an SSE-KMS topic (SNS developer
        guide, "Enable compatibility between event sources from AWS services and encrypted topics"). Both are
        scoped to this account and to the alarms' ARNs (aws:SourceAccount, aws:SourceArn: the confused-deputy
        guard). The ARNs are built from the alarms' names, not referenced: a reference from the key policy to an
        alarm would close a loop (alarm -> topic -> key -> alarm).
        """
        self.allow_service("cloudwatch.amazonaws.com", alarm_arns, "Alarms")

    def allow_service(self, service: str, source_arns: list[str], what: str) -> None:
        """Let ``service`` publish to the encrypted topic on behalf of ``source_arns`` of this account only (topic
        policy: sns:Publish; key policy: the data-key actions)."""
        stack = Stack.of(self)
        conditions = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": list(source_arns)},
        }
        principal = iam.ServicePrincipal(service)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid=f"AllowOwn{what}ToPublish",
                principals=[principal],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=conditions,
            )
        )
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid=f"AllowOwn{what}ToEncryptNotifications",
                principals=[principal],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],  # in a key policy "*" means this key
                conditions=conditions,
            )
        )

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
