"""A remedy that resumes: the train Lambda carries the failed job's checkpoints over to the next job's checkpoint
prefix before launching it (as SageMaker then copies them into /opt/ml/checkpoints), and the attempt says so."""

from __future__ import annotations

import boto3
import pytest
from workflow_harness import BASE_INPUT, BUCKET, REGION, completed, issues_found

from contracts import bucket_layout
from lambdas.remediation import checkpoint_resume

OVERFIT_SCRIPT = {
    "source_dir": f"s3://{BUCKET}/code/my-script.tar.gz",
    "entry_point": "train.py",
    "hyperparameters": {"lr": 0.1, "weight_decay": 0.0001, "epochs": 10},
    "remedies": {"Overfit": [{"hyperparameter": "weight_decay", "multiply_by": 10, "max": 0.01, "resume": True}]},
}


def test_the_next_job_starts_with_the_failed_jobs_checkpoints(workflow):
    s3 = boto3.client("s3", region_name=REGION)
    sagemaker = workflow.script([issues_found("Overfit", step=40)], [completed()])

    def write_checkpoints(job_name: str) -> None:
        if job_name.endswith("-001"):  # the first job checkpoints two epochs before it overfits
            for epoch in (3, 4):
                key = f"{bucket_layout.checkpoint_prefix(job_name)}checkpoint-epoch-{epoch:04d}.pt"
                s3.put_object(Bucket=BUCKET, Key=key, Body=b"weights %d" % epoch)

    workflow.on_launch(write_checkpoints)
    execution = workflow.run({**BASE_INPUT, **OVERFIT_SCRIPT})

    assert execution.status == "SUCCEEDED", execution.cause
    first, second = (request["TrainingJobName"] for request in sagemaker.created)
    attempts = execution.output["state"]["attempts"]
    assert attempts[0]["decision"]["resume_from"] == first
    # the job's debugger did not count its checkpoint files here: the reason says what a resuming script does
    assert (
        f"The next job gets {first}'s checkpoint directory: a script that resumes from its checkpoints continues "
        f"where {first} stopped" in attempts[0]["decision"]["reason"]
    )
    assert (attempts[1]["resumed_from"], attempts[1]["resumed_checkpoint_files"]) == (first, 2)
    assert attempts[0]["resumed_from"] is None
    carried = s3.list_objects_v2(Bucket=BUCKET, Prefix=bucket_layout.checkpoint_prefix(second))["Contents"]
    assert sorted(item["Key"].rsplit("/", 1)[1] for item in carried) == ["checkpoint-epoch-0003.pt", "checkpoint-epoch-0004.pt"]
    body = s3.get_object(Bucket=BUCKET, Key=carried[1]["Key"])["Body"].read()
    assert body == b"weights 4"
    assert sagemaker.created[1]["CheckpointConfig"]["S3Uri"] == bucket_layout.checkpoint_uri(BUCKET, second)
    assert sagemaker.hyperparameter(1, "weight_decay") == "0.001"


def test_a_failed_job_that_left_no_checkpoints_makes_the_next_start_from_step_0(workflow):
    workflow.script([issues_found("Overfit", step=40)], [completed()])
    execution = workflow.run({**BASE_INPUT, **OVERFIT_SCRIPT})
    assert execution.status == "SUCCEEDED", execution.cause
    second = execution.output["state"]["attempts"][1]
    assert second["resumed_checkpoint_files"] == 0


def test_a_prefix_with_more_files_than_a_checkpoint_directory_keeps_is_not_copied(workflow):
    s3 = boto3.client("s3", region_name=REGION)
    prefix = bucket_layout.checkpoint_prefix("remediation-job-0123-001")
    for index in range(checkpoint_resume.MAX_CHECKPOINT_FILES + 1):
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}shard-{index}", Body=b"x")
    with pytest.raises(checkpoint_resume.CheckpointCopyError) as caught:
        checkpoint_resume.copy_checkpoints(s3, BUCKET, "remediation-job-0123-001", "remediation-job-0123-002")
    assert f"more than {checkpoint_resume.MAX_CHECKPOINT_FILES} files" in str(caught.value)
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix=bucket_layout.checkpoint_prefix("remediation-job-0123-002"))
