"""The execution role SageMaker training jobs run as.

Trust boundary: every training job of the stack runs under this one role, so one run's training script can write
another run's objects under debug-output/ and checkpoints/ (their keys are named per job at run time; IAM has no
per-job condition for a SageMaker job's own calls). The monitor refuses a rule-status document that names another
job (lambdas/remediation/monitoring/rule_reading.py), but a script that forges its own job's document, or overwrites another
run's checkpoints, is inside the boundary: a stack is one trust domain; run untrusted scripts in a stack of their
own. In legacy mode the role may also stop any of the stack's training jobs (the StopTraining rule action): those
grants exist only when the stack is deployed with -c legacy_sagemaker_debugger=true.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnMapping, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from contracts import bucket_layout
from infra.nag import account_scoped_arn_prefix, acknowledge, attribute_placeholder
from lambdas.remediation.job.training_images import (
    DLC_ACCOUNT_BY_REGION,
    RULE_EVALUATOR_ACCOUNT_BY_REGION,
    RULE_EVALUATOR_REPOSITORY,
    training_repositories,
)
from lambdas.remediation.job.xgboost_images import XGBOOST_ACCOUNT_BY_REGION, XGBOOST_REPOSITORY

TRAINING_LOG_GROUP = "/aws/sagemaker/TrainingJobs"
TRAINING_METRICS_NAMESPACE = "/aws/sagemaker/TrainingJobs"
#: Legacy mode: SageMaker runs each built-in rule as a processing job (under this role), logging here.
RULE_EVALUATION_LOG_GROUP = "/aws/sagemaker/ProcessingJobs"

READ_PREFIXES = (bucket_layout.CODE_PREFIX, bucket_layout.DATA_PREFIX, bucket_layout.CHECKPOINTS_PREFIX)
#: debug-output/ is read back by SageMaker Debugger's rule evaluator in legacy mode only (the tensors its hook wrote).
LEGACY_READ_PREFIXES = (bucket_layout.DEBUG_OUTPUT_PREFIX,)
WRITE_PREFIXES = (bucket_layout.JOBS_PREFIX, bucket_layout.DEBUG_OUTPUT_PREFIX, bucket_layout.CHECKPOINTS_PREFIX)


class SageMakerExecutionRole(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        artifacts_bucket: s3.IBucket,
        job_name_prefix: str,
        legacy_sagemaker_debugger: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            description="Runs the remediation workflow's SageMaker training jobs",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com").with_conditions(
                {"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
        )
        bucket = artifacts_bucket
        read_prefixes = READ_PREFIXES + (LEGACY_READ_PREFIXES if legacy_sagemaker_debugger else ())
        # Channels and source archive in, checkpoints both ways (a spot restart reads them back); in legacy mode
        # debug output both ways (the rule evaluator reads what the hook wrote).
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadCodeDataAndCheckpoints" + ("AndDebugOutput" if legacy_sagemaker_debugger else ""),
                actions=["s3:GetObject"],
                resources=[bucket.arn_for_objects(prefix + "*") for prefix in read_prefixes],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ListCodeDataAndCheckpoints" + ("AndDebugOutput" if legacy_sagemaker_debugger else ""),
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [prefix + "*" for prefix in read_prefixes]}},
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteOutputDebugOutputAndCheckpoints",
                actions=["s3:PutObject"],
                resources=[bucket.arn_for_objects(prefix + "*") for prefix in WRITE_PREFIXES],
            )
        )
        self._grant_job_logs(stack, TRAINING_LOG_GROUP, job_name_prefix, "CreateTrainingLogGroup", "WriteOwnJobLogStreams")
        if legacy_sagemaker_debugger:
            # Legacy mode (SageMaker Debugger's built-in rules): each rule runs as a processing job under this role,
            # named after the lower-cased training job, so its log streams start with the job-name prefix.
            self._grant_job_logs(
                stack, RULE_EVALUATION_LOG_GROUP, job_name_prefix, "CreateRuleEvaluationLogGroup", "WriteOwnRuleEvaluationLogStreams"
            )
            # The StopTraining action (smdebug rules/action/stop_training_action.py) finds the InProgress job by
            # name with ListTrainingJobs (no resource-level scoping) and stops it.
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="RuleActionFindsItsTrainingJob",
                    actions=["sagemaker:ListTrainingJobs"],
                    resources=["*"],
                )
            )
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="RuleActionStopsOwnTrainingJobs",
                    actions=["sagemaker:StopTrainingJob"],
                    resources=[
                        stack.format_arn(service="sagemaker", resource="training-job", resource_name=f"{job_name_prefix}*")
                    ],
                )
            )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="PublishTrainingMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": TRAINING_METRICS_NAMESPACE}},
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="AuthenticateToEcr",
                actions=["ecr:GetAuthorizationToken"],
                resources=["*"],
            )
        )
        # The same per-region registries the train Lambda builds its image URIs from (training_images.py).
        registries = CfnMapping(self, "ImageRegistries", mapping=image_registries_by_region())
        repositories = [("Training", repository) for repository in training_repositories()]
        repositories.append(("XGBoost", XGBOOST_REPOSITORY))
        if legacy_sagemaker_debugger:
            repositories.append(("Rules", RULE_EVALUATOR_REPOSITORY))
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="PullTrainingAndRuleImages",
                actions=["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                resources=[
                    f"arn:{stack.partition}:ecr:{stack.region}:{registries.find_in_map(stack.region, key)}:"
                    f"repository/{repository}"
                    for key, repository in repositories
                ],
            )
        )
        bucket_arn = attribute_placeholder(bucket.node.default_child)
        for prefix in sorted(set(read_prefixes + WRITE_PREFIXES)):
            acknowledge(
                self.role,
                f"AwsSolutions-IAM5[Resource::{bucket_arn}/{prefix}*]",
                f"Objects under {prefix} are named per job at run time; the prefix is their scope.",
            )
        log_groups = [(TRAINING_LOG_GROUP, "training")]
        if legacy_sagemaker_debugger:
            log_groups.append((RULE_EVALUATION_LOG_GROUP, "rule evaluation"))
        for group, what in log_groups:
            logs_arn = account_scoped_arn_prefix(self, "logs") + f"log-group:{group}"
            acknowledge(
                self.role,
                f"AwsSolutions-IAM5[Resource::{logs_arn}:*]",
                f"SageMaker creates its one {what} log group and lists its streams; the group is the scope.",
            )
            acknowledge(
                self.role,
                f"AwsSolutions-IAM5[Resource::{logs_arn}:log-stream:{job_name_prefix}*]",
                f"{what.capitalize()} log streams are named after the job at run time; the job-name prefix is their scope.",
            )
        if legacy_sagemaker_debugger:
            acknowledge(
                self.role,
                "AwsSolutions-IAM5[Resource::"
                + account_scoped_arn_prefix(self, "sagemaker")
                + f"training-job/{job_name_prefix}*]",
                "The legacy StopTraining rule action stops jobs named at run time; the job-name prefix is their scope.",
            )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken, namespace-scoped PutMetricData (legacy: sagemaker:ListTrainingJobs) take no ARN.",
        )

    def _grant_job_logs(self, stack: Stack, log_group: str, job_name_prefix: str, create_sid: str, write_sid: str) -> None:
        """SageMaker creates ``log_group`` and writes one stream per job, named after the job: the streams of this
        stack's jobs (the job-name prefix) only."""
        log_group_arn = stack.format_arn(
            service="logs", resource="log-group", resource_name=log_group, arn_format=ArnFormat.COLON_RESOURCE_NAME
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid=create_sid, actions=["logs:CreateLogGroup", "logs:DescribeLogStreams"], resources=[log_group_arn + ":*"]
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid=write_sid,
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[f"{log_group_arn}:log-stream:{job_name_prefix}*"],
            )
        )


def image_registries_by_region() -> dict[str, dict[str, str]]:
    """Region -> the ECR accounts of the PyTorch training images, SageMaker's XGBoost images and the legacy rule
    evaluator image.

    Only the regions the PyTorch training images are published in: a deploy elsewhere fails on the missing mapping
    key before anything is created. Where SageMaker Debugger has no evaluator (or SageMaker no XGBoost image) the
    entry repeats the training registry (no such repository there: the grant is inert, and the train Lambda refuses
    legacy mode, or framework xgboost, in that region).
    """
    return {
        region: {
            "Training": account,
            "XGBoost": XGBOOST_ACCOUNT_BY_REGION.get(region, account),
            "Rules": RULE_EVALUATOR_ACCOUNT_BY_REGION.get(region, account),
        }
        for region, account in sorted(DLC_ACCOUNT_BY_REGION.items())
    }
