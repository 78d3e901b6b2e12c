"""The execution role SageMaker training jobs run as.

Trust boundary: every training job of the stack runs under this one role, and IAM has no per-job condition for a
SageMaker job's own calls, so the role may write anywhere under debug-output/ and checkpoints/. What keeps one run's
job from writing another run's evidence is that it cannot name it: each job's debug output and checkpoints go under
debug-output|checkpoints/<job>/<token>/, the token an HMAC of the job's name under its execution's secret
(lambdas/remediation/job/job_identity.py), and the role may list debug-output/ not at all (in legacy mode only the
rule evaluator's <job>/debug-output/ tensors) and checkpoints/ only below a token it already knows
(:func:`listable_prefixes`), so no listing reveals one. The monitor reads a job's rule status only under its token
(lambdas/remediation/monitoring/rule_reading.py). A script that forges its own job's document is inside the
boundary: run untrusted scripts in a stack of their own. In legacy mode the role may also stop any of the stack's
training jobs (the StopTraining rule action): those grants exist only when the stack is deployed with
-c legacy_sagemaker_debugger=true.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, CfnMapping, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from contracts import bucket_layout
from infra.nag import account_scoped_arn_prefix, acknowledge, attribute_placeholder
from lambdas.remediation.job.job_identity import EVIDENCE_TOKEN_LENGTH
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
#: SageMaker Debugger's hook (legacy mode) writes its tensors to <DebugHookConfig.S3OutputPath>/<job>/debug-output/ and
#: its rule evaluator reads them back: in legacy mode the role reads (and lists) those and nothing else of
#: debug-output/.
LEGACY_TENSORS = f"{bucket_layout.DEBUG_OUTPUT_PREFIX}*/debug-output"
WRITE_PREFIXES = (bucket_layout.JOBS_PREFIX, bucket_layout.DEBUG_OUTPUT_PREFIX, bucket_layout.CHECKPOINTS_PREFIX)


def listable_prefixes(legacy_sagemaker_debugger: bool) -> list[str]:
    """The s3:prefix patterns (StringLike: ``*`` any characters, ``?`` one) the role may list: code/ and data/; a
    job's checkpoints only below a token (``checkpoints/<job>/`` + EVIDENCE_TOKEN_LENGTH characters: the listing
    SageMaker makes of a job's own CheckpointConfig.S3Uri, with or without its trailing slash), so no listing shows
    another job's token; in legacy mode the evaluator's tensors."""
    token = "?" * EVIDENCE_TOKEN_LENGTH
    return [
        f"{bucket_layout.CODE_PREFIX}*",
        f"{bucket_layout.DATA_PREFIX}*",
        f"{bucket_layout.CHECKPOINTS_PREFIX}*/{token}*",
        *([f"{LEGACY_TENSORS}*"] if legacy_sagemaker_debugger else []),
    ]


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
        read_patterns = [prefix + "*" for prefix in READ_PREFIXES] + (
            [f"{LEGACY_TENSORS}/*"] if legacy_sagemaker_debugger else []
        )
        # Channels and source archive in, checkpoints both ways (a spot restart reads them back); in legacy mode
        # the hook's tensors (the rule evaluator reads what SageMaker's hook wrote).
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadCodeDataAndCheckpoints" + ("AndDebugOutput" if legacy_sagemaker_debugger else ""),
                actions=["s3:GetObject"],
                resources=[bucket.arn_for_objects(pattern) for pattern in read_patterns],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ListCodeDataAndOwnCheckpoints" + ("AndDebugOutput" if legacy_sagemaker_debugger else ""),
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": listable_prefixes(legacy_sagemaker_debugger)}},
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
        for pattern in sorted(set(read_patterns + [prefix + "*" for prefix in WRITE_PREFIXES])):
            acknowledge(
                self.role,
                f"AwsSolutions-IAM5[Resource::{bucket_arn}/{pattern}]",
                f"Objects under {pattern.rstrip('*')} are named per job at run time; the prefix is their scope.",
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
