"""The training remediation stack: bucket, topic, Lambdas, state machine, SageMaker role, alarms, outputs."""

from __future__ import annotations

import re
from pathlib import Path

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from contracts.stack_guardrails import CostGuardrails
from infra.alarms import OperationsAlarms
from infra.budget import SpendBudget
from infra.dead_letters import DeadLetters
from infra.events import LoopEvents
from infra.functions import (
    DEFAULT_POWERTOOLS_VERSION,
    POWERTOOLS_METRICS_NAMESPACE,
    POWERTOOLS_SERVICE_NAME,
    RemediationFunctions,
)
from infra.notifications import NotificationTopic
from infra.outputs import (
    OUTPUT_BUCKET_NAME,
    OUTPUT_JOB_NAME_PREFIX,
    OUTPUT_SAGEMAKER_ROLE_ARN,
    OUTPUT_STATE_MACHINE_ARN,
    OUTPUT_TOPIC_ARN,
)
from infra.powertools_layer import AUTO
from infra.sagemaker_role import SageMakerExecutionRole
from infra.storage import DEFAULT_DEBUG_OUTPUT_EXPIRATION_DAYS, ArtifactsStorage
from infra.teardown import StackTeardown
from infra.workflow import DEFAULT_DEFINITION_PATH, RemediationWorkflow

DEFAULT_JOB_NAME_PREFIX = "remediation"
# Training job names are [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; leave room for the execution and attempt suffix.
JOB_NAME_PREFIX_PATTERN = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,23}")


def check_job_name_prefix(job_name_prefix: str) -> str:
    """The prefix scopes every training-job grant (and the legacy rule evaluator's log streams), so it must
    match the ARNs SageMaker writes: those are lower-cased (arn:...:training-job/team-a-...), and IAM compares
    resource ARNs case-sensitively, so a prefix with capitals would leave the Lambdas allowed on no job at all.
    Refused rather than lower-cased behind the user's back: the prefix is also the job names they will look for."""
    if len(job_name_prefix) > 24 or not JOB_NAME_PREFIX_PATTERN.fullmatch(job_name_prefix):
        raise ValueError(
            f"job_name_prefix: {job_name_prefix!r} is not a valid training job name prefix; use 1-24 lower-case "
            "letters, digits and inner hyphens (e.g. -c job_name_prefix=remediation)"
        )
    if job_name_prefix != job_name_prefix.lower():
        raise ValueError(
            f"job_name_prefix: {job_name_prefix!r} has capital letters, but SageMaker lower-cases training job ARNs "
            "and IAM matches them case-sensitively, so its grants would match no job; use a lower-case prefix "
            f"(-c job_name_prefix={job_name_prefix.lower()})"
        )
    return job_name_prefix


class TrainingRemediationStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        job_name_prefix: str = DEFAULT_JOB_NAME_PREFIX,
        notification_email: str | None = None,
        definition_path: Path = DEFAULT_DEFINITION_PATH,
        powertools_version: str = DEFAULT_POWERTOOLS_VERSION,
        powertools_layer: str = AUTO,
        debug_output_expiration_days: int = DEFAULT_DEBUG_OUTPUT_EXPIRATION_DAYS,
        cost_guardrails: CostGuardrails | None = None,
        legacy_sagemaker_debugger: bool = False,
        budget_limit_usd: float | None = None,
        **kwargs,
    ) -> None:
        check_job_name_prefix(job_name_prefix)
        cost_guardrails = cost_guardrails or CostGuardrails()
        super().__init__(scope, construct_id, **kwargs)
        self.template_options.description = "Automated remediation of unstable SageMaker training: Step Functions loop of train, monitor and plan Lambdas"
        self.storage = storage = ArtifactsStorage(
            self, "Storage", debug_output_expiration_days=debug_output_expiration_days
        )
        self.notifications = notifications = NotificationTopic(
            self, "Notifications", notification_email=notification_email
        )
        self.sagemaker = sagemaker = SageMakerExecutionRole(
            self,
            "SageMaker",
            artifacts_bucket=storage.artifacts_bucket,
            job_name_prefix=job_name_prefix,
            legacy_sagemaker_debugger=legacy_sagemaker_debugger,
        )
        self.dead_letters = dead_letters = DeadLetters(self, "DeadLetters")
        self.functions = functions = RemediationFunctions(
            self,
            "Functions",
            artifacts_bucket=storage.artifacts_bucket,
            notifications=notifications,
            sagemaker_role=sagemaker.role,
            job_name_prefix=job_name_prefix,
            dead_letter_queue=dead_letters.queue,
            cost_guardrails=cost_guardrails,
            legacy_sagemaker_debugger=legacy_sagemaker_debugger,
            powertools_version=powertools_version,
            powertools_layer_choice=powertools_layer,
        )
        self.workflow = workflow = RemediationWorkflow(
            self,
            "Workflow",
            train=functions.train,
            monitor=functions.monitor,
            plan=functions.plan,
            job_events=functions.job_events,
            notifications=notifications,
            definition_path=definition_path,
        )
        self.events = LoopEvents(
            self,
            "Events",
            state_machine=workflow.state_machine,
            job_events_function=functions.job_events,
            execution_cleanup_function=functions.execution_cleanup,
            train_function=functions.train,
            plan_function=functions.plan,
            job_name_prefix=job_name_prefix,
            dead_letter_queue=dead_letters.queue,
        )
        self.alarms = OperationsAlarms(
            self,
            "Alarms",
            state_machine=workflow.state_machine,
            functions=functions.all,
            dead_letter_queue=dead_letters.queue,
            notifications=notifications,
            metrics_namespace=POWERTOOLS_METRICS_NAMESPACE,
            service_name=POWERTOOLS_SERVICE_NAME,
        )
        self.teardown = StackTeardown(
            self,
            "Teardown",
            function=functions.stack_teardown,
            state_machine=workflow.state_machine,
            outlived=[
                *(function for function in functions.all if function is not functions.stack_teardown),
                *(function.role for function in functions.all if function is not functions.stack_teardown),
                sagemaker.role,
                self.events,
                notifications,
                dead_letters,
            ],
        )
        self.budget = (
            SpendBudget(self, "Budget", limit_usd=budget_limit_usd, notifications=notifications)
            if budget_limit_usd is not None
            else None
        )

        CfnOutput(self, OUTPUT_STATE_MACHINE_ARN, value=workflow.state_machine.state_machine_arn)
        CfnOutput(self, OUTPUT_TOPIC_ARN, value=notifications.topic.topic_arn)
        CfnOutput(self, OUTPUT_BUCKET_NAME, value=storage.artifacts_bucket.bucket_name)
        CfnOutput(self, OUTPUT_SAGEMAKER_ROLE_ARN, value=sagemaker.role.role_arn)
        CfnOutput(self, OUTPUT_JOB_NAME_PREFIX, value=job_name_prefix)
