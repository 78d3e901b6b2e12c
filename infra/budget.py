"""An optional monthly AWS Budgets alarm on the account's SageMaker spend (``-c budget_limit_usd=N``), notifying the
stack's topic: the ceiling the workflow cannot keep itself (every stack and every other use of SageMaker in the
account counts; the stack's guardrails bound what its own executions may spend: contracts/stack_guardrails.py).

It notifies when the month's actual spend passes 80% of the limit and when the forecast passes 100%. AWS Budgets
publishes as budgets.amazonaws.com: the topic and its key allow it for this budget of this account only
(infra/notifications.py)."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_budgets as budgets
from constructs import Construct

from infra.notifications import NotificationTopic

#: The service as Cost Explorer and Budgets name it.
SAGEMAKER_SERVICE = "Amazon SageMaker"
#: (notification type, percentage of the limit) that notify the topic.
THRESHOLDS = (("ACTUAL", 80), ("FORECASTED", 100))


def check_budget_limit(value: object) -> float | None:
    """The context's budget_limit_usd: None (unset: no budget) or a positive number of US dollars."""
    if value in (None, "", "none", "off"):
        return None
    try:
        limit = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"budget_limit_usd: must be a number of US dollars a month (got {value!r})") from None
    if not 0 < limit <= 1_000_000:
        raise ValueError(f"budget_limit_usd: must be above 0 and at most 1,000,000 US dollars (got {value!r})")
    return limit


class SpendBudget(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, limit_usd: float, notifications: NotificationTopic
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.budget_name = f"{stack.stack_name}-sagemaker-monthly"
        self.budget = budgets.CfnBudget(
            self,
            "Budget",
            budget=budgets.CfnBudget.BudgetDataProperty(
                budget_name=self.budget_name,
                budget_type="COST",
                time_unit="MONTHLY",
                budget_limit=budgets.CfnBudget.SpendProperty(amount=limit_usd, unit="USD"),
                cost_filters={"Service": [SAGEMAKER_SERVICE]},
            ),
            notifications_with_subscribers=[
                budgets.CfnBudget.NotificationWithSubscribersProperty(
                    notification=budgets.CfnBudget.NotificationProperty(
                        comparison_operator="GREATER_THAN",
                        notification_type=kind,
                        threshold=percent,
                        threshold_type="PERCENTAGE",
                    ),
                    subscribers=[
                        budgets.CfnBudget.SubscriberProperty(
                            address=notifications.topic.topic_arn, subscription_type="SNS"
                        )
                    ],
                )
                for kind, percent in THRESHOLDS
            ],
        )
        budget_arn = f"arn:{stack.partition}:budgets::{stack.account}:budget/{self.budget_name}"
        notifications.allow_service("budgets.amazonaws.com", [budget_arn], "Budget")
