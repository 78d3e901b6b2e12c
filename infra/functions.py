"""The Lambdas, each with its own least-privilege role: train, monitor and plan (the loop's tasks), job-events (the
event-driven wait's two ends), execution-cleanup (every execution that ended otherwise than it should) and
stack-teardown (the stack's delete: infra/teardown.py)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import AssetHashType, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from contracts import bucket_layout, time_budgets
from contracts.stack_guardrails import (
    LEGACY_DISABLED,
    LEGACY_ENABLED,
    LEGACY_SAGEMAKER_DEBUGGER_ENV,
    SECRET_EVIDENCE_PATHS_ENV,
    CostGuardrails,
)
from infra.bundling import HANDLER_PACKAGE, REPO_ROOT, handler_bundling_options
from infra.nag import account_scoped_arn_prefix, acknowledge, attribute_placeholder
from infra.notifications import NotificationTopic
from infra.powertools_layer import AUTO, powertools_layer

DEFAULT_POWERTOOLS_VERSION = "3.37.0"  # = aws_lambda_powertools in requirements.txt
POWERTOOLS_SERVICE_NAME = "training-remediation"
POWERTOOLS_METRICS_NAMESPACE = "TrainingRemediation"
SAGEMAKER_SERVICE = "sagemaker.amazonaws.com"


@dataclass(frozen=True)
class HandlerSpec:
    construct_id: str
    module: str
    description: str
    timeout_seconds: int


#: Each function's timeout is contracts.time_budgets' (the handlers keep their AWS calls inside it).
TIMEOUTS = time_budgets.LAMBDA_TIMEOUT_SECONDS
TRAIN = HandlerSpec(
    "Train", "lambdas.train_handler", "Launches the next SageMaker training job of a remediation", TIMEOUTS["train"]
)
MONITOR = HandlerSpec(
    "Monitor", "lambdas.monitor_handler", "Reads a training job and its debugger rule statuses", TIMEOUTS["monitor"]
)
PLAN = HandlerSpec("Plan", "lambdas.plan_handler", "Prescribes the next run_spec after an issue", TIMEOUTS["plan"])
JOB_EVENTS = HandlerSpec(
    "JobEvents",
    "lambdas.job_events_handler",
    "Keeps a wait's task token; a training job's state change ends the wait",
    TIMEOUTS["job_events"],
)
EXECUTION_CLEANUP = HandlerSpec(
    "ExecutionCleanup",
    "lambdas.execution_cleanup_handler",
    "Stops the training job an execution left when it timed out, was aborted or failed",
    TIMEOUTS["execution_cleanup"],
)
#: The stack's delete waits for it (CloudFormation's custom resource, infra/teardown.py): Lambda's longest timeout, to
#: stop every execution and job and wait out a launch under way (the train Lambda's timeout) and the jobs' stops.
STACK_TEARDOWN = HandlerSpec(
    "StackTeardown",
    "lambdas.stack_teardown_handler",
    "On stack deletion, stops the stack's running executions and training jobs before their role goes",
    900,
)
#: Lambda retries a failed asynchronous invocation (an EventBridge delivery) this many times, then sends the event to
#: the dead-letter queue.
ASYNC_RETRY_ATTEMPTS = 2


class RemediationFunctions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        artifacts_bucket: s3.IBucket,
        notifications: NotificationTopic,
        sagemaker_role: iam.IRole,
        job_name_prefix: str,
        dead_letter_queue: sqs.IQueue,
        cost_guardrails: CostGuardrails,
        legacy_sagemaker_debugger: bool,
        powertools_version: str = DEFAULT_POWERTOOLS_VERSION,
        powertools_layer_choice: str = AUTO,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.powertools_layer = powertools_layer(
            self, "PowertoolsLayer", choice=powertools_layer_choice, version=powertools_version
        )
        self.code = lambda_.Code.from_asset(
            str(REPO_ROOT / HANDLER_PACKAGE),
            asset_hash_type=AssetHashType.OUTPUT,
            bundling=handler_bundling_options(),
        )
        environment = {
            "NOTIFICATION_TOPIC_ARN": notifications.topic.topic_arn,
            "JOB_NAME_PREFIX": job_name_prefix,
            "POWERTOOLS_SERVICE_NAME": POWERTOOLS_SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            # Never the event or a traced response in a log or a trace: they hold whole payloads and task tokens (and a
            # payload exceeds X-Ray's 64 KB segment). The handlers' decorators say the same (capture_response=False).
            "POWERTOOLS_LOGGER_LOG_EVENT": "false",
            "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
            # The stack's guardrails: Initialize refuses what they do not allow, the train Lambda and the planner keep
            # each execution within its instance-hours (contracts.stack_guardrails).
            **cost_guardrails.to_environment(),
            LEGACY_SAGEMAKER_DEBUGGER_ENV: LEGACY_ENABLED if legacy_sagemaker_debugger else LEGACY_DISABLED,
            # The stack's jobs share one role: each execution's evidence goes under its own secret prefixes.
            SECRET_EVIDENCE_PATHS_ENV: "on",
        }
        self.train = self._function(TRAIN, environment)
        self.monitor = self._function(MONITOR, environment)
        self.plan = self._function(PLAN, environment)
        self.job_events = self._function(JOB_EVENTS, {**environment, "ARTIFACTS_BUCKET": artifacts_bucket.bucket_name})
        self.execution_cleanup = self._function(EXECUTION_CLEANUP, environment)
        self.stack_teardown = self._function(STACK_TEARDOWN, environment)
        # EventBridge invokes these two asynchronously: an event whose handler fails on every try is kept, not lost.
        for function in (self.job_events, self.execution_cleanup):
            function.configure_async_invoke(
                on_failure=destinations.SqsDestination(dead_letter_queue),
                retry_attempts=ASYNC_RETRY_ATTEMPTS,
                max_event_age=Duration.hours(2),
            )

        training_jobs = stack.format_arn(
            service="sagemaker", resource="training-job", resource_name=f"{job_name_prefix}*"
        )
        self.train.add_to_role_policy(
            iam.PolicyStatement(
                sid="LaunchOwnTrainingJobsWithinTheCostGuardrails",
                actions=["sagemaker:CreateTrainingJob"],
                resources=[training_jobs],
                # Whatever an execution input says, the role launches only the allowed instance types (the Null
                # condition: a request must name them), each job for at most the stack's instance-hours over the most
                # instances a job may have: IAM has no instance-count key, so this bound is what keeps a job of the
                # most instances within the instance-hours (the count itself is the workflow's to check).
                conditions={
                    "ForAllValues:StringEquals": {"sagemaker:InstanceTypes": list(cost_guardrails.allowed_instance_types)},
                    "Null": {"sagemaker:InstanceTypes": "false"},
                    "NumericLessThanEquals": {
                        "sagemaker:MaxRuntimeInSeconds": str(cost_guardrails.max_job_runtime_seconds)
                    },
                },
            )
        )
        self.train.add_to_role_policy(
            iam.PolicyStatement(
                sid="WatchOwnTrainingJobs",
                # ListTags: a job found under our name is adopted only if its tags prove it is this execution's;
                # StopTrainingJob: the job it just launched, when its execution ended meanwhile
                actions=["sagemaker:DescribeTrainingJob", "sagemaker:ListTags", "sagemaker:StopTrainingJob"],
                resources=[training_jobs],
            )
        )
        self.train.add_to_role_policy(
            iam.PolicyStatement(
                sid="TagOwnTrainingJobsOnCreate",
                actions=["sagemaker:AddTags"],
                resources=[training_jobs],
                conditions={"StringEquals": {"sagemaker:TaggingAction": "CreateTrainingJob"}},
            )
        )
        self.train.add_to_role_policy(
            iam.PolicyStatement(
                sid="PassOnlyTheTrainingRoleToSageMaker",
                actions=["iam:PassRole"],
                resources=[sagemaker_role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": SAGEMAKER_SERVICE}},
            )
        )
        # A remedy that resumes carries the last job's checkpoints over to the next one (server-side CopyObject); a
        # copy that cannot finish is deleted, so the job starts from step 0 rather than from half a checkpoint.
        checkpoints = artifacts_bucket.arn_for_objects(bucket_layout.CHECKPOINTS_PREFIX + "*")
        self.train.add_to_role_policy(
            iam.PolicyStatement(
                sid="CarryCheckpointsOver",
                # AbortMultipartUpload: a file copied in parts whose copy fails is abandoned, not left half-way
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[checkpoints],
            )
        )
        self.train.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListCheckpoints",
                actions=["s3:ListBucket"],
                resources=[artifacts_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [bucket_layout.CHECKPOINTS_PREFIX + "*"]}},
            )
        )
        self.monitor.add_to_role_policy(
            iam.PolicyStatement(
                sid="WatchAndStopOwnTrainingJobs",
                # ListTags: the cleanup stops a job only if its tags prove it is this execution's
                actions=["sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob", "sagemaker:ListTags"],
                resources=[training_jobs],
            )
        )
        self.monitor.add_to_role_policy(
            iam.PolicyStatement(
                sid="ReadDebugOutput",
                actions=["s3:GetObject"],
                resources=[artifacts_bucket.arn_for_objects(bucket_layout.DEBUG_OUTPUT_PREFIX + "*")],
            )
        )
        # Without ListBucket a missing rule-status.json answers 403 instead of NoSuchKey.
        self.monitor.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListDebugOutput",
                actions=["s3:ListBucket"],
                resources=[artifacts_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [bucket_layout.DEBUG_OUTPUT_PREFIX + "*"]}},
            )
        )
        task_tokens = artifacts_bucket.arn_for_objects(bucket_layout.TASK_TOKENS_PREFIX + "*")
        self.job_events.add_to_role_policy(
            iam.PolicyStatement(
                sid="KeepAndReadTaskTokens", actions=["s3:PutObject", "s3:GetObject"], resources=[task_tokens]
            )
        )
        # Without ListBucket an event for a job nobody waits for reads 403 instead of NoSuchKey.
        self.job_events.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListTaskTokens",
                actions=["s3:ListBucket"],
                resources=[artifacts_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [bucket_layout.TASK_TOKENS_PREFIX + "*"]}},
            )
        )
        self.job_events.add_to_role_policy(
            iam.PolicyStatement(
                sid="SeeWhetherTheJobHasEnded", actions=["sagemaker:DescribeTrainingJob"], resources=[training_jobs]
            )
        )
        self.execution_cleanup.add_to_role_policy(
            iam.PolicyStatement(
                sid="StopOwnTrainingJobsOfEndedExecutions",
                # ListTags: a job is stopped only if its tags prove it is the ended execution's
                actions=["sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob", "sagemaker:ListTags"],
                resources=[training_jobs],
            )
        )
        for function in self.publishing:
            notifications.grant_encrypted_publish(function.role)

        job_arn_finding = (
            "Resource::" + account_scoped_arn_prefix(self, "sagemaker") + f"training-job/{job_name_prefix}*"
        )
        self.stack_teardown.add_to_role_policy(
            iam.PolicyStatement(
                sid="StopOwnTrainingJobsOnStackDelete",
                # ListTags: a job is stopped only if its tags name an execution of this stack's state machine
                actions=["sagemaker:ListTags", "sagemaker:StopTrainingJob"],
                resources=[training_jobs],
            )
        )
        self.stack_teardown.add_to_role_policy(
            iam.PolicyStatement(sid="FindRunningTrainingJobs", actions=["sagemaker:ListTrainingJobs"], resources=["*"])
        )
        acknowledge(
            self.stack_teardown.role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray tracing and sagemaker:ListTrainingJobs (the teardown finds the running jobs) take no resource ARN.",
        )
        for function in (self.train, self.monitor, self.job_events, self.execution_cleanup, self.stack_teardown):
            acknowledge(
                function.role,
                f"AwsSolutions-IAM5[{job_arn_finding}]",
                "Training jobs are named at run time; the stack's job-name prefix is their scope.",
            )
        acknowledge(
            self.monitor.role,
            f"AwsSolutions-IAM5[Resource::{attribute_placeholder(artifacts_bucket.node.default_child)}/"
            f"{bucket_layout.DEBUG_OUTPUT_PREFIX}*]",
            "Rule-status documents are keyed by job name at run time; the debug-output/ prefix is their scope.",
        )
        acknowledge(
            self.train.role,
            f"AwsSolutions-IAM5[Resource::{attribute_placeholder(artifacts_bucket.node.default_child)}/"
            f"{bucket_layout.CHECKPOINTS_PREFIX}*]",
            "Checkpoints are keyed by job name at run time; the checkpoints/ prefix is their scope.",
        )
        acknowledge(
            self.job_events.role,
            f"AwsSolutions-IAM5[Resource::{attribute_placeholder(artifacts_bucket.node.default_child)}/"
            f"{bucket_layout.TASK_TOKENS_PREFIX}*]",
            "Task tokens are kept by job name at run time; the task-tokens/ prefix is their scope.",
        )
        for function in self.all:
            if function is self.stack_teardown:
                continue  # acknowledged above, with its ListTrainingJobs
            acknowledge(
                function.role,
                "AwsSolutions-IAM5[Resource::*]",
                "X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support no resource-level scoping.",
            )
        acknowledge(
            self,
            "AwsSolutions-L1",
            "Python 3.13 (supported to 2029-06-30) matches the Powertools v3 layer (python3.13) the handlers are tested on.",
        )

    @property
    def all(self) -> tuple[lambda_.Function, ...]:
        return (self.train, self.monitor, self.plan, self.job_events, self.execution_cleanup, self.stack_teardown)

    @property
    def loop(self) -> tuple[lambda_.Function, ...]:
        """The functions the state machine invokes."""
        return (self.train, self.monitor, self.plan, self.job_events)

    @property
    def publishing(self) -> tuple[lambda_.Function, ...]:
        """The functions that notify the topic."""
        return (self.train, self.monitor, self.plan, self.execution_cleanup)

    def _function(self, spec: HandlerSpec, environment: dict[str, str]) -> lambda_.Function:
        log_group = logs.LogGroup(
            self,
            f"{spec.construct_id}Logs",
            retention=logs.RetentionDays.THREE_MONTHS,
            removal_policy=RemovalPolicy.RETAIN,  # what ran stays readable after the stack is deleted
        )
        role = iam.Role(
            self,
            f"{spec.construct_id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{spec.construct_id} Lambda of the training remediation workflow",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteOwnLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            )
        )
        return lambda_.Function(
            self,
            spec.construct_id,
            description=spec.description,
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.X86_64,
            handler=f"{spec.module}.handler",
            code=self.code,
            layers=[self.powertools_layer],
            role=role,
            log_group=log_group,
            memory_size=512,
            timeout=Duration.seconds(spec.timeout_seconds),
            tracing=lambda_.Tracing.ACTIVE,
            environment=environment,
        )
