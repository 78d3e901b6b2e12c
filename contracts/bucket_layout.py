"""Where everything lives in the artifacts bucket. One definition for the Lambdas,
the local runtime, the CDK stack (IAM scopes, lifecycle rules) and the CLI.

    s3://{bucket}/code/sourcedir.tar.gz           the built-in example's training source (and the debugger)
    s3://{bucket}/code/{name}-{digest}/sourcedir.tar.gz   a user's source directory, by content
    s3://{bucket}/data/train/ , data/test/        the built-in example's channels (x.npy, y.npy)
    s3://{bucket}/data/{channel}-{digest}/        a user's channel directory, by content
    s3://{bucket}/jobs/{job}/output/model.tar.gz  SageMaker's OutputDataConfig (it appends the job name)
    s3://{bucket}/debug-output/{job}/             the in-job debugger's output; rule-status.json at its root
    s3://{bucket}/debug-output/{job}/tensorboard-output/   the job's TensorBoard event files (TensorBoardOutputConfig's
                                                  default S3OutputPath is debug-output/; SageMaker appends the rest)
    s3://{bucket}/checkpoints/{job}/              CheckpointConfig
    s3://{bucket}/task-tokens/{job}.json          the task token of the execution's wait for that job (the
                                                  job-events Lambda keeps it; the job's state change uses it)
"""

from __future__ import annotations

from contracts.rule_status import RULE_STATUS_FILE

CODE_PREFIX = "code/"
DATA_PREFIX = "data/"
JOBS_PREFIX = "jobs/"
DEBUG_OUTPUT_PREFIX = "debug-output/"
CHECKPOINTS_PREFIX = "checkpoints/"
TASK_TOKENS_PREFIX = "task-tokens/"

SOURCE_ARCHIVE_KEY = CODE_PREFIX + "sourcedir.tar.gz"
TRAIN_CHANNEL_PREFIX = DATA_PREFIX + "train/"
TEST_CHANNEL_PREFIX = DATA_PREFIX + "test/"
CHANNEL_PREFIXES = {"train": TRAIN_CHANNEL_PREFIX, "test": TEST_CHANNEL_PREFIX}


def s3_uri(bucket: str, key: str = "") -> str:
    return f"s3://{bucket}/{key}"


def split_s3_uri(uri: str) -> tuple[str, str]:
    """'s3://bucket/a/b' -> ('bucket', 'a/b'). Raises ValueError naming the URI when it is not one."""
    if not uri.startswith("s3://") or len(uri) <= 5:
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri!r}")
    return bucket, key


def source_archive_uri(bucket: str) -> str:
    return s3_uri(bucket, SOURCE_ARCHIVE_KEY)


#: Content-addressed keys: the same directory always lands at the same key, and a running job's source
#: or data never changes under it.
DIGEST_LENGTH = 16


def user_source_archive_key(label: str, digest: str) -> str:
    return f"{CODE_PREFIX}{label}-{digest[:DIGEST_LENGTH]}/sourcedir.tar.gz"


def user_channel_prefix(channel: str, digest: str) -> str:
    return f"{DATA_PREFIX}{channel}-{digest[:DIGEST_LENGTH]}/"


def train_channel_uri(bucket: str) -> str:
    return s3_uri(bucket, TRAIN_CHANNEL_PREFIX)


def test_channel_uri(bucket: str) -> str:
    return s3_uri(bucket, TEST_CHANNEL_PREFIX)


def job_output_uri(bucket: str) -> str:
    return s3_uri(bucket, JOBS_PREFIX)


def debug_output_uri(bucket: str, job_name: str) -> str:
    return s3_uri(bucket, f"{DEBUG_OUTPUT_PREFIX}{job_name}/")


def rule_status_key(job_name: str) -> str:
    return f"{DEBUG_OUTPUT_PREFIX}{job_name}/{RULE_STATUS_FILE}"


def checkpoint_prefix(job_name: str) -> str:
    return f"{CHECKPOINTS_PREFIX}{job_name}/"


def checkpoint_uri(bucket: str, job_name: str) -> str:
    return s3_uri(bucket, checkpoint_prefix(job_name))


def task_token_key(job_name: str) -> str:
    return f"{TASK_TOKENS_PREFIX}{job_name}.json"


#: SageMaker uploads a job's TensorBoard LocalPath to {TensorBoardOutputConfig.S3OutputPath}/{job}/ + this.
TENSORBOARD_JOB_SUFFIX = "tensorboard-output/"


def default_tensorboard_output_uri(bucket: str) -> str:
    """The run_spec's default TensorBoard S3OutputPath: each job's event files then sit beside its debug output."""
    return s3_uri(bucket, DEBUG_OUTPUT_PREFIX)


def tensorboard_job_uri(tensorboard_output_uri: str, job_name: str) -> str:
    """Where SageMaker puts one job's TensorBoard event files for an S3OutputPath."""
    return f"{tensorboard_output_uri.rstrip('/')}/{job_name}/{TENSORBOARD_JOB_SUFFIX}"
