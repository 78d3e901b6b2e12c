"""Spot interruptions on the local training platform: a job asks for them with its tag; the platform reclaims its
instance at the step named (SIGKILL), restores its checkpoint directory from the checkpoint S3Uri and restarts it,
through SageMaker's secondary statuses (Interrupted, Restarting, Training)."""

from __future__ import annotations

import json
import re

import pytest
from botocore.exceptions import ClientError

from contracts.spot_interruptions import LOCAL_SPOT_INTERRUPTIONS_TAG, to_tag_value

from .conftest import BUCKET
from .shape_check import shape_problems
from .test_training_platform import DESCRIBE_OUTPUT, request, wait_for


def spot_request(name: str, interruptions: list[dict], **hyperparameters: str) -> dict:
    body = request(name, mode="spot", Tags=[{"Key": LOCAL_SPOT_INTERRUPTIONS_TAG, "Value": to_tag_value(interruptions)}])
    body["HyperParameters"].update({key: json.dumps(value) for key, value in hyperparameters.items()})
    return body


@pytest.mark.parametrize("quiet", [False, True], ids=["progress-lines", "debugger-steps-only"])
def test_a_job_interrupted_twice_restarts_from_its_restored_checkpoints_and_completes(platform_env, quiet):
    """The job's progress is what its log prints, or (a script without progress lines) the steps its debugger writes."""
    platform, sagemaker, s3 = platform_env
    name = f"remediation-spot-{int(quiet)}"
    # 12 steps, a checkpoint after steps 3, 7 and 11; the script holds still at steps 5 and 9 the first time, where
    # the instance is reclaimed
    sagemaker.create_training_job(
        **spot_request(
            name, [{"at_step": 5}, {"at_step": 9}], steps="12", per_epoch="4", hold_at="5,9", quiet=str(quiet).lower()
        )
    )
    described = wait_for(sagemaker, name)
    assert shape_problems(described, DESCRIBE_OUTPUT) == []
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Completed", "Completed")
    assert [item["Status"] for item in described["SecondaryStatusTransitions"]] == [
        "Starting", "Downloading", "Training",
        "Interrupted", "Restarting", "Training",
        "Interrupted", "Restarting", "Training",
        "Uploading", "Completed",
    ]  # fmt: skip
    interrupted = [item for item in described["SecondaryStatusTransitions"] if item["Status"] == "Interrupted"]
    assert all("spot training instances were interrupted" in item["StatusMessage"] for item in interrupted)

    job = platform.job(name)
    log = job.log.path.read_text()
    # each restart found what S3 held: the checkpoints written before it, never the reclaimed disk's half-written file
    assert re.findall(r"checkpoints found: (.*)", log) == ["", "checkpoint-0000.txt", "checkpoint-0000.txt checkpoint-0001.txt"]
    assert log.count("the instance was reclaimed") == 2
    assert [interruption["requested"] for interruption in job.interruptions] == ["at step 5", "at step 9"]
    assert [interruption["at_step"] for interruption in job.interruptions] == [5, 9]
    if not quiet:  # the steps redone after each restart are counted once
        assert [step["step"] for step in job.steps] == list(range(12))
    keys = {item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"checkpoints/{name}/")["Contents"]}
    assert keys == {f"checkpoints/{name}/checkpoint-000{epoch}.txt" for epoch in range(3)}


def test_a_job_without_checkpoint_config_starts_over_on_its_new_instance(platform_env):
    platform, sagemaker, _ = platform_env
    name = "remediation-spot-nocheckpoints-1"
    body = spot_request(name, [{"at_step": 5}], steps="8", per_epoch="4", hold_at="5")
    del body["CheckpointConfig"]
    sagemaker.create_training_job(**body)
    assert wait_for(sagemaker, name)["TrainingJobStatus"] == "Completed"
    log = platform.job(name).log.path.read_text()
    # its checkpoint after step 3 was on the reclaimed instance's disk only
    assert re.findall(r"checkpoints found: (.*)", log) == ["", ""]
    assert "restarting from the start (the job has no CheckpointConfig)" in log
    assert [step["step"] for step in platform.job(name).steps] == list(range(8))


def test_a_job_without_the_tag_is_never_interrupted_and_a_bad_tag_is_refused(platform_env):
    _, sagemaker, _ = platform_env
    body = request("remediation-spot-bad-1", mode="complete")
    body["Tags"] = [{"Key": LOCAL_SPOT_INTERRUPTIONS_TAG, "Value": "at_step=0"}]
    with pytest.raises(ClientError) as refused:
        sagemaker.create_training_job(**body)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert f"Tags.{LOCAL_SPOT_INTERRUPTIONS_TAG}" in refused.value.response["Error"]["Message"]

    sagemaker.create_training_job(**request("remediation-spot-none-1", mode="complete"))
    described = wait_for(sagemaker, "remediation-spot-none-1")
    assert "Interrupted" not in [item["Status"] for item in described["SecondaryStatusTransitions"]]


def test_the_monitor_keeps_waiting_while_a_job_is_interrupted_and_restarting(platform_env, monkeypatch):
    """The workflow's monitor decision on the platform's own descriptions, taken while the job was Interrupted (its
    outputs being copied to S3) and Restarting (its checkpoints being restored)."""
    from lambdas.remediation.execution_input import initial_state
    from lambdas.remediation.monitoring import verdict as monitoring
    from local_runtime import job_staging
    from local_runtime.job_description import describe

    platform, sagemaker, _ = platform_env
    seen: dict[str, dict] = {}
    restore, sync = job_staging.restore_checkpoints, platform.sync_outputs

    def restore_seen(job, mirror, s3):
        seen.setdefault(job.secondary_status, describe(job, platform.region, mirror))
        return restore(job, mirror, s3)

    def sync_seen(job):
        if job.secondary_status == "Interrupted":
            seen.setdefault(job.secondary_status, describe(job, platform.region, platform.mirror))
        sync(job)

    monkeypatch.setattr(job_staging, "restore_checkpoints", restore_seen)
    monkeypatch.setattr(platform, "sync_outputs", sync_seen)
    name = "remediation-spot-monitor-1"
    sagemaker.create_training_job(**spot_request(name, [{"at_step": 2}], steps="6", per_epoch="2", hold_at="2"))
    assert wait_for(sagemaker, name)["TrainingJobStatus"] == "Completed"

    state = initial_state(
        {"bucket": BUCKET, "region": "us-east-1", "sm_role": "arn:aws:iam::123456789012:role/SageMakerRole",
         "instance_type": "local", "spot_interruptions": [{"at_step": 2}]}
    )  # fmt: skip
    assert sorted(seen) == ["Interrupted", "Restarting"]
    for secondary, described in seen.items():
        assert shape_problems(described, DESCRIBE_OUTPUT) == []
        assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("InProgress", secondary)
        decision = monitoring.decide(described, [], state)
        assert (decision.next_step, decision.outcome, decision.stop_job) == ("wait", "running", False)
        assert f"spot capacity interrupted ({secondary})" in decision.reason
