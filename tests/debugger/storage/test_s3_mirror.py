"""The S3 mirror of the debug output, against moto's in-process S3."""

from __future__ import annotations

import json
import math

import boto3
import pytest
import torch
from moto import mock_aws
from torch import nn

from contracts.rule_status import RuleStatusDocument
from debugger import Hook, StopTrainingRequested

BUCKET = "artifacts"
PREFIX = "debug-output/job-1/"


@pytest.fixture
def s3(monkeypatch, offline_aws_credentials):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("DEBUG_OUTPUT_S3_SYNC", raising=False)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def keys(client) -> set[str]:
    return {item["Key"] for item in client.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX).get("Contents", [])}


def status_in_s3(client) -> RuleStatusDocument:
    return RuleStatusDocument.from_json(
        client.get_object(Bucket=BUCKET, Key=PREFIX + "rule-status.json")["Body"].read()
    )


def run(hook: Hook, steps: int, nan_at: int | None = None) -> None:
    torch.manual_seed(0)
    model, criterion = nn.Linear(5, 3), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    if nan_at is not None:
        model.weight.register_hook(lambda gradient: gradient * math.nan if hook.step == nan_at else gradient)
    for _ in range(steps):
        criterion(model(torch.randn(8, 5)), torch.randint(0, 3, (8,))).backward()


def test_mirror_uploads_status_on_change_and_steps_in_background(s3, tmp_path):
    hook = Hook.from_configs(
        hook_config={"S3OutputPath": f"s3://{BUCKET}/{PREFIX}", "HookParameters": {"save_interval": "2"}},
        rule_configs=[
            {"RuleConfigurationName": "ExplodingTensor", "RuleParameters": {"action_json": '[{"name":"StopTraining"}]'}}
        ],
        out_dir=tmp_path,
        job_name="job-1",
    )
    assert status_in_s3(s3).rules[0].RuleEvaluationStatus == "InProgress"  # written at start
    with pytest.raises(StopTrainingRequested):
        run(hook, steps=10, nan_at=5)
    # the status change reached S3 before the exception left the hook
    stopped = status_in_s3(s3)
    assert stopped.rules[0].RuleEvaluationStatus == "IssuesFound" and stopped.rules[0].issue.step == 5
    hook.record_metric("test_loss", 1.5)
    hook.close(training_ended=True)
    assert keys(s3) == {
        PREFIX + "rule-status.json",
        PREFIX + "metrics.jsonl",
        PREFIX + "training_job_end.ts",
        PREFIX + "collections.json",
        PREFIX + "steps/000000000000.npz",
        PREFIX + "steps/000000000002.npz",
        PREFIX + "steps/000000000004.npz",
        PREFIX + "steps/000000000005.npz",  # the first non-finite step is always kept
    }
    assert status_in_s3(s3).training_ended
    local = (tmp_path / "steps" / "000000000004.npz").read_bytes()
    assert s3.get_object(Bucket=BUCKET, Key=PREFIX + "steps/000000000004.npz")["Body"].read() == local
    assert json.loads(s3.get_object(Bucket=BUCKET, Key=PREFIX + "metrics.jsonl")["Body"].read())["value"] == 1.5


def test_sync_off_keeps_everything_local(s3, tmp_path, monkeypatch):
    monkeypatch.setenv("DEBUG_OUTPUT_S3_SYNC", "off")
    hook = Hook.from_configs(
        hook_config={"S3OutputPath": f"s3://{BUCKET}/{PREFIX}"}, out_dir=tmp_path, job_name="job-1"
    )
    run(hook, steps=2)
    hook.close()
    assert hook.mirror is None and keys(s3) == set()
    assert (tmp_path / "rule-status.json").exists() and (tmp_path / "training_job_end.ts").exists()


def test_out_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("DEBUG_OUTPUT_DIR", str(tmp_path / "from-env"))
    hook = Hook.from_configs(hook_config={"LocalPath": str(tmp_path / "from-config")}, job_name="j")
    assert hook.out_dir == tmp_path / "from-env"
    monkeypatch.delenv("DEBUG_OUTPUT_DIR")
    hook = Hook.from_configs(hook_config={"LocalPath": str(tmp_path / "from-config")}, job_name="j")
    assert hook.out_dir == tmp_path / "from-config" and (hook.out_dir / "rule-status.json").exists()


def test_the_mirror_signs_for_the_buckets_region_the_job_request_names(monkeypatch, offline_aws_credentials, tmp_path):
    """Without a region the client signed for us-east-1, and a bucket in another region refuses that (finding 4 of
    issue 23): the job request passes the run_spec's region (DEBUG_OUTPUT_S3_REGION)."""
    from debugger.storage.s3_mirror import S3Mirror
    from lambdas.remediation.execution_input import initial_state
    from lambdas.remediation.job import job_request

    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    state = initial_state({"bucket": "artifacts-eu", "region": "eu-west-1", "sm_role": "arn:aws:iam::123456789012:role/R"})
    request = job_request.build_create_training_job_request(state, "remediation-job-0123456789-001")
    for name, value in request["Environment"].items():
        monkeypatch.setenv(name, value)
    mirror = S3Mirror(tmp_path, "s3://artifacts-eu/debug-output/remediation-job-0123456789-001/")
    try:
        assert mirror.client.meta.region_name == "eu-west-1"
    finally:
        mirror.close([])
