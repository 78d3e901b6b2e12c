"""A remedy that resumes: the train Lambda carries the failed job's checkpoints over to the next job's checkpoint
prefix before launching it (as SageMaker then copies them into /opt/ml/checkpoints), and the attempt says so."""

from __future__ import annotations

import boto3
import pytest
from workflow_harness import BASE_INPUT, BUCKET, REGION, completed, issues_found

from contracts import bucket_layout
from lambdas.remediation.job import checkpoint_resume, job_identity

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
                key = f"{sagemaker.checkpoint_prefix(job_name)}checkpoint-epoch-{epoch:04d}.pt"
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
    carried = s3.list_objects_v2(Bucket=BUCKET, Prefix=sagemaker.checkpoint_prefix(second))["Contents"]
    assert sorted(item["Key"].rsplit("/", 1)[1] for item in carried) == ["checkpoint-epoch-0003.pt", "checkpoint-epoch-0004.pt"]
    body = s3.get_object(Bucket=BUCKET, Key=carried[1]["Key"])["Body"].read()
    assert body == b"weights 4"
    # each job's own prefix, under the execution's secret: no other run's job can list or name it
    key = execution.output["state"]["evidence_key"]
    assert sagemaker.created[1]["CheckpointConfig"]["S3Uri"] == bucket_layout.s3_uri(
        BUCKET, job_identity.evidence_prefixes(second, key).checkpoints
    )
    assert len(key) == 32 and sagemaker.checkpoint_prefix(second) == f"checkpoints/{second}/{job_identity.evidence_token(key, second)}/"
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


def test_a_copy_that_runs_out_of_time_half_way_is_removed_and_the_job_starts_from_step_0(workflow):
    """The copy is planned within the Lambda's time, but the time runs out after two files: the files already
    copied are deleted (a job must not resume from half a checkpoint) and the launch starts from step 0."""
    s3 = boto3.client("s3", region_name=REGION)
    source, target = "remediation-job-0123-001", "remediation-job-0123-002"
    for index in range(3):
        s3.put_object(Bucket=BUCKET, Key=f"{bucket_layout.checkpoint_prefix(source)}shard-{index}", Body=b"x" * 10)
    left = iter([100.0, 100.0, 100.0, 0.0])  # the plan, two files, then nothing left
    resumed = checkpoint_resume.resume_or_start_over(
        s3, s3, BUCKET, source, target, seconds_left=lambda: next(left) + checkpoint_resume.time_budgets.LAUNCH_RESERVE_SECONDS
    )
    assert resumed.copied is None and resumed.from_job == source
    assert "train Lambda has 0 s left" in resumed.skipped and "2 file(s) already copied were removed" in resumed.skipped
    assert "Contents" not in s3.list_objects_v2(Bucket=BUCKET, Prefix=bucket_layout.checkpoint_prefix(target))


def test_a_retried_copy_goes_on_where_the_last_try_stopped(workflow):
    s3 = boto3.client("s3", region_name=REGION)
    source, target = "remediation-job-0123-001", "remediation-job-0123-002"
    for index in range(3):
        s3.put_object(Bucket=BUCKET, Key=f"{bucket_layout.checkpoint_prefix(source)}shard-{index}", Body=b"x" * 10)
    s3.copy_object(
        Bucket=BUCKET,
        Key=f"{bucket_layout.checkpoint_prefix(target)}shard-0",
        CopySource={"Bucket": BUCKET, "Key": f"{bucket_layout.checkpoint_prefix(source)}shard-0"},
    )
    copies = []

    class Counting:
        def copy_object(self, **request):
            copies.append(request["Key"])
            return s3.copy_object(**request)

    copied = checkpoint_resume.copy_checkpoints(s3, BUCKET, source, target, copy_client=Counting())
    assert copied.files == 3 and [key.rsplit("/", 1)[1] for key in copies] == ["shard-1", "shard-2"]


def test_a_multipart_checkpoint_already_copied_is_not_copied_again(workflow):
    """A file SageMaker uploaded in parts has an ETag ("...-2") its single-part copy never has: the 'already copied'
    check compared ETags, so a retried task copied it again at every try (and a copy slower than a try never
    finished). The same size, written at or after the source, is a finished copy (CopyObject writes it whole)."""
    s3 = boto3.client("s3", region_name=REGION)
    source, target = "remediation-job-0123-001", "remediation-job-0123-002"
    key = f"{bucket_layout.checkpoint_prefix(source)}model.pt"
    upload = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    parts = [
        {"PartNumber": number, "ETag": s3.upload_part(Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=number, Body=body)["ETag"]}
        for number, body in ((1, b"a" * 5 * 1024**2), (2, b"b" * 1024))
    ]
    s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=upload, MultipartUpload={"Parts": parts})
    checkpoint_resume.copy_checkpoints(s3, BUCKET, source, target)  # the first try copies it
    source_etag = s3.head_object(Bucket=BUCKET, Key=key)["ETag"]
    copied = s3.head_object(Bucket=BUCKET, Key=f"{bucket_layout.checkpoint_prefix(target)}model.pt")
    assert source_etag.endswith('-2"') and copied["ETag"] != source_etag  # the ETags differ: the old check's blind spot

    copies = []

    class Counting:
        def copy_object(self, **request):
            copies.append(request["Key"])
            return s3.copy_object(**request)

    again = checkpoint_resume.copy_checkpoints(s3, BUCKET, source, target, copy_client=Counting())
    assert again.files == 1 and copies == []


def test_a_large_checkpoint_is_copied_in_parts_each_a_short_request(workflow, monkeypatch):
    """A file above COPY_PART_BYTES is copied with UploadPartCopy, a part per request (here 5 MiB parts, S3's
    smallest), so no read waits on a whole 5 GB copy (the copy client's 120 s read timeout used to expire on one and
    the task looped until AwsTransientError); the copy is byte for byte the source."""
    from boto3.s3.transfer import TransferConfig

    part = 5 * 1024**2
    monkeypatch.setattr(checkpoint_resume, "COPY_PART_BYTES", part)
    monkeypatch.setattr(
        checkpoint_resume,
        "MULTIPART_COPY",
        TransferConfig(multipart_threshold=part + 1, multipart_chunksize=part, use_threads=False),
    )
    s3 = boto3.client("s3", region_name=REGION)
    calls: list[str] = []
    s3.meta.events.register("before-call.s3.*", lambda model, **kwargs: calls.append(model.name))
    source, target = "remediation-job-0123-001", "remediation-job-0123-002"
    body = bytes(range(256)) * (11 * 1024**2 // 256)  # 11 MiB: three parts
    s3.put_object(Bucket=BUCKET, Key=f"{bucket_layout.checkpoint_prefix(source)}model.pt", Body=body)

    copied = checkpoint_resume.copy_checkpoints(s3, BUCKET, source, target)

    assert copied.files == 1 and copied.bytes == len(body)
    assert calls.count("UploadPartCopy") == 3 and "CopyObject" not in calls and "CompleteMultipartUpload" in calls
    carried = s3.get_object(Bucket=BUCKET, Key=f"{bucket_layout.checkpoint_prefix(target)}model.pt")["Body"].read()
    assert carried == body
