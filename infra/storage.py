"""The artifacts bucket (code, data, job outputs, debug output, checkpoints) and its access-log bucket."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_s3 as s3
from constructs import Construct

from contracts import bucket_layout
from infra.nag import acknowledge

DEFAULT_DEBUG_OUTPUT_EXPIRATION_DAYS = 30


class ArtifactsStorage(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        debug_output_expiration_days: int = DEFAULT_DEBUG_OUTPUT_EXPIRATION_DAYS,
    ) -> None:
        super().__init__(scope, construct_id)
        if debug_output_expiration_days < 1:
            raise ValueError(
                f"debug_output_expiration_days: must be >= 1 (got {debug_output_expiration_days}); "
                "set the context value debug_output_expiration_days to a positive number of days"
            )

        self.access_log_bucket = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # S3 server access logging only delivers to SSE-S3 buckets
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[s3.LifecycleRule(id="ExpireAccessLogs", expiration=Duration.days(365))],
        )
        acknowledge(
            self.access_log_bucket,
            "AwsSolutions-S1",
            "This is the access-log destination itself; logging it into itself would loop.",
        )

        self.artifacts_bucket = s3.Bucket(
            self,
            "Artifacts",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_log_bucket,
            server_access_logs_prefix="artifacts/",
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="ExpireDebugOutput",
                    prefix=bucket_layout.DEBUG_OUTPUT_PREFIX,
                    expiration=Duration.days(debug_output_expiration_days),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                s3.LifecycleRule(
                    id="ExpireCheckpoints",
                    prefix=bucket_layout.CHECKPOINTS_PREFIX,
                    expiration=Duration.days(debug_output_expiration_days),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                # A token is of use while its execution runs (48 h at most).
                s3.LifecycleRule(
                    id="ExpireTaskTokens",
                    prefix=bucket_layout.TASK_TOKENS_PREFIX,
                    expiration=Duration.days(3),
                    noncurrent_version_expiration=Duration.days(1),
                ),
                s3.LifecycleRule(
                    id="TrimOldVersionsAndUploads",
                    noncurrent_version_expiration=Duration.days(30),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                ),
            ],
        )
