"""The local SageMaker training platform, driven through boto3 (botocore validates every request)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import tarfile
import time

import botocore.session
import pytest
from botocore.exceptions import ClientError, ParamValidationError

from contracts import bucket_layout
from contracts.job import HOOK_CONFIG_HYPERPARAMETER, OUT_OF_MEMORY_FAILURE
from contracts.progress_log import METRIC_DEFINITIONS

from .conftest import BUCKET, process_alive, processes_in_group
from .shape_check import shape_problems

DESCRIBE_OUTPUT = (
    botocore.session.get_session().get_service_model("sagemaker").operation_model("DescribeTrainingJob").output_shape
)


def request(name: str, mode: str = "complete", **overrides):
    hook_config = {"S3OutputPath": bucket_layout.debug_output_uri(BUCKET, name)}
    body = {
        "TrainingJobName": name,
        "HyperParameters": {
            "mode": mode,
            "sagemaker_program": json.dumps("train.py"),
            "sagemaker_submit_directory": json.dumps(bucket_layout.source_archive_uri(BUCKET)),
            HOOK_CONFIG_HYPERPARAMETER: json.dumps(json.dumps(hook_config)),
        },
        "AlgorithmSpecification": {
            "TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.5-cpu-py311",
            "TrainingInputMode": "File",
            "MetricDefinitions": METRIC_DEFINITIONS,
        },
        "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
        "InputDataConfig": [
            {
                "ChannelName": channel,
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri}},
            }
            for channel, uri in (
                ("train", bucket_layout.train_channel_uri(BUCKET)),
                ("test", bucket_layout.test_channel_uri(BUCKET)),
            )
        ],
        "OutputDataConfig": {"S3OutputPath": bucket_layout.job_output_uri(BUCKET)},
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 10},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        "CheckpointConfig": {"S3Uri": bucket_layout.checkpoint_uri(BUCKET, name)},
    }
    body.update(overrides)
    return body


def wait_for(sagemaker, name, statuses=("Completed", "Failed", "Stopped"), timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = sagemaker.describe_training_job(TrainingJobName=name)
        if described["TrainingJobStatus"] in statuses:
            return described
        time.sleep(0.1)
    raise AssertionError(f"{name} did not reach {statuses} in {timeout}s: {described['TrainingJobStatus']}")


def wait_for_secondary(sagemaker, name, secondary, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        described = sagemaker.describe_training_job(TrainingJobName=name)
        if described["SecondaryStatus"] == secondary:
            return described
        time.sleep(0.05)
    raise AssertionError(f"{name} never reached {secondary}")


def test_completed_job_follows_the_container_contract_and_answers_in_sagemakers_shape(platform_env):
    platform, sagemaker, s3 = platform_env
    name = "remediation-complete-1"
    arn = sagemaker.create_training_job(**request(name))["TrainingJobArn"]
    assert arn.endswith(f":training-job/{name}")

    described = wait_for(sagemaker, name)
    assert shape_problems(described, DESCRIBE_OUTPUT) == []
    assert described["TrainingJobStatus"] == "Completed"
    assert described["SecondaryStatus"] == "Completed"
    assert [item["Status"] for item in described["SecondaryStatusTransitions"]] == [
        "Starting",
        "Downloading",
        "Training",
        "Uploading",
        "Completed",
    ]
    assert described["TrainingStartTime"] <= described["TrainingEndTime"]
    assert "FailureReason" not in described
    metrics = {item["MetricName"]: item["Value"] for item in described["FinalMetricDataList"]}
    assert metrics["train:loss"] == pytest.approx(2.0 / 3)
    assert metrics["train:gradient_norm"] == 12
    assert metrics["test:accuracy"] == 0.75

    # Outputs are S3 objects, as SageMaker's uploads would leave them.
    artifact = described["ModelArtifacts"]["S3ModelArtifacts"]
    assert artifact == f"s3://{BUCKET}/jobs/{name}/output/model.tar.gz"
    body = s3.get_object(Bucket=BUCKET, Key=f"jobs/{name}/output/model.tar.gz")["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as archive:
        assert archive.extractfile("model.pt").read() == b"weights"
    report = json.loads(s3.get_object(Bucket=BUCKET, Key=f"debug-output/{name}/report.json")["Body"].read())
    assert s3.get_object(Bucket=BUCKET, Key=f"checkpoints/{name}/checkpoint.txt")["Body"].read() == b"step 3"

    # Script mode: --name value for every non-reserved hyperparameter; SM_HPS and hyperparameters.json agree.
    assert report["argv"][:2] == ["--mode", "complete"]
    assert "sagemaker_program" not in report["hps_env"] and report["hps_env"]["mode"] == "complete"
    assert report["hyperparameters_file"]["sagemaker_program"] == '"train.py"'
    assert report["channels"] == {"train": ["x.npy", "y.npy"], "test": ["x.npy", "y.npy"]}
    assert report["job_name"] == name and report["s3_sync"] == "off" and report["threads"] == "1"
    assert report["pgid"] == report["pid"], "the job runs in its own process group"


def test_tensorboard_output_config_is_written_for_the_job_and_its_local_path_uploaded(platform_env):
    platform, sagemaker, s3 = platform_env
    name = "remediation-tensorboard-1"
    config = {"LocalPath": "/opt/ml/output/tensorboard", "S3OutputPath": f"s3://{BUCKET}/debug-output/"}
    sagemaker.create_training_job(**request(name, TensorBoardOutputConfig=config))
    described = wait_for(sagemaker, name)
    assert described["TrainingJobStatus"] == "Completed" and described["TensorBoardOutputConfig"] == config
    written = json.loads((platform.job_dir(name) / "input" / "config" / "tensorboardoutputconfig.json").read_text())
    assert written["S3OutputPath"] == config["S3OutputPath"]
    # SageMaker's upload: {S3OutputPath}/{job}/tensorboard-output/, which the run directory mirrors on disk
    key = f"debug-output/{name}/tensorboard-output/events.out.tfevents.test"
    assert s3.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"events"
    assert written["LocalPath"] == str(platform.local_path_for(f"s3://{BUCKET}/{key}").parent)


def test_failed_job_reports_the_failure_file_as_its_reason(platform_env):
    _, sagemaker, _ = platform_env
    sagemaker.create_training_job(**request("remediation-fail-1", mode="fail"))
    sagemaker.create_training_job(**request("remediation-rule-stop-1", mode="stop_training"))
    sagemaker.create_training_job(**request("remediation-crash-1", mode="crash_without_failure_file"))
    failed = wait_for(sagemaker, "remediation-fail-1")
    assert shape_problems(failed, DESCRIBE_OUTPUT) == []
    assert (failed["TrainingJobStatus"], failed["SecondaryStatus"]) == ("Failed", "Failed")
    assert failed["FailureReason"] == "ValueError: the fixture was asked to fail"
    rule_stop = wait_for(sagemaker, "remediation-rule-stop-1")
    assert rule_stop["FailureReason"].startswith("StopTraining: rule ExplodingTensor found an issue at step 2")
    crash = wait_for(sagemaker, "remediation-crash-1")
    assert "exited with code 7" in crash["FailureReason"] and "something broke" in crash["FailureReason"]


def test_stop_terminates_the_whole_process_group(platform_env):
    platform, sagemaker, s3 = platform_env
    name = "remediation-stop-1"
    sagemaker.create_training_job(**request(name, mode="run_until_stopped"))
    wait_for_secondary(sagemaker, name, "Training")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        described = sagemaker.describe_training_job(TrainingJobName=name)
        keys = [
            item["Key"]
            for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"debug-output/{name}/").get("Contents", [])
        ]
        if keys:
            break
        time.sleep(0.1)
    report = json.loads(s3.get_object(Bucket=BUCKET, Key=f"debug-output/{name}/report.json")["Body"].read())
    assert process_alive(report["child_pid"])

    sagemaker.stop_training_job(TrainingJobName=name)
    assert sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"] in ("Stopping", "Stopped")
    described = wait_for(sagemaker, name, timeout=300)
    assert shape_problems(described, DESCRIBE_OUTPUT) == []
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Stopped", "Stopped")
    assert "Stopping" in [item["Status"] for item in described["SecondaryStatusTransitions"]]
    assert processes_in_group(report["pgid"]) == []
    assert not process_alive(report["child_pid"])

    with pytest.raises(ClientError) as stopped_again:
        sagemaker.stop_training_job(TrainingJobName=name)
    assert stopped_again.value.response["Error"]["Code"] == "ValidationException"


def test_a_process_killed_by_the_kernel_is_reported_killed_with_its_peak_memory(platform_env):
    """SIGKILL from outside the platform (the kernel's out-of-memory killer sends it): not "exited with code
    -9" but a FailureReason the monitor reads as out of memory, with the process's peak memory."""
    platform, sagemaker, _ = platform_env
    name = "remediation-oom-1"
    sagemaker.create_training_job(**request(name, mode="hold_memory"))
    job = platform.job(name)
    holding = platform.debug_output_dir(job) / "holding.txt"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not holding.exists():
        time.sleep(0.05)
    assert holding.exists(), "the fixture never got to hold its memory"
    os.kill(job.process.pid, signal.SIGKILL)

    described = wait_for(sagemaker, name, timeout=300)
    assert shape_problems(described, DESCRIBE_OUTPUT) == []
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Failed", "Failed")
    reason = described["FailureReason"]
    assert reason.startswith("OutOfMemoryError: the training process was killed by SIGKILL (signal 9)"), reason
    assert "ExitCode 137" in reason and "exited with code" not in reason
    assert OUT_OF_MEMORY_FAILURE.search(reason)
    assert job.killed_by_signal == "SIGKILL" and job.exit_code == -9
    assert job.peak_memory_bytes >= 96 << 20
    peak = re.search(r"peak memory ([0-9.]+) MiB", reason)
    assert peak and float(peak.group(1)) >= 96


def test_a_job_that_ignores_sigterm_is_killed_after_the_grace_period(platform_env):
    platform, sagemaker, s3 = platform_env
    name = "remediation-stubborn-1"
    sagemaker.create_training_job(**request(name, mode="ignore_sigterm"))
    wait_for_secondary(sagemaker, name, "Training")
    report = platform.debug_output_dir(platform.job(name)) / "report.json"  # written after it ignores SIGTERM
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not report.exists():
        time.sleep(0.05)
    assert report.exists(), "the fixture never got to ignore SIGTERM"
    started = time.monotonic()
    sagemaker.stop_training_job(TrainingJobName=name)
    described = wait_for(sagemaker, name, timeout=300)
    assert described["TrainingJobStatus"] == "Stopped"
    assert time.monotonic() - started >= platform.stop_grace_seconds - 0.2
    pgid = platform.job(name).process.pid
    assert processes_in_group(pgid) == []


def test_max_runtime_stops_the_job(platform_env):
    _, sagemaker, _ = platform_env
    name = "remediation-timeout-1"
    sagemaker.create_training_job(
        **request(name, mode="run_until_stopped", StoppingCondition={"MaxRuntimeInSeconds": 1})  # the API's least
    )
    described = wait_for(sagemaker, name, timeout=300)
    assert (described["TrainingJobStatus"], described["SecondaryStatus"]) == ("Stopped", "MaxRuntimeExceeded")
    assert shape_problems(described, DESCRIBE_OUTPUT) == []


def test_duplicate_names_unknown_jobs_and_invalid_requests_are_refused_like_sagemaker(platform_env):
    platform, sagemaker, _ = platform_env
    sagemaker.create_training_job(**request("remediation-dup-1"))
    with pytest.raises(sagemaker.exceptions.ResourceInUse):
        sagemaker.create_training_job(**request("remediation-dup-1"))
    with pytest.raises(ClientError) as unknown:
        sagemaker.describe_training_job(TrainingJobName="remediation-nobody")
    assert unknown.value.response["Error"] == {
        "Code": "ValidationException",
        "Message": "Requested resource not found.",
    }
    with pytest.raises(ClientError) as unknown_stop:
        sagemaker.stop_training_job(TrainingJobName="remediation-nobody")
    assert unknown_stop.value.response["Error"]["Code"] == "ValidationException"
    # botocore checks the real schema before the platform sees anything.
    with pytest.raises(ParamValidationError):
        sagemaker.create_training_job(**request("remediation-bad-1", StoppingCondition={"MaxRuntimeInSeconds": "long"}))
    assert "remediation-bad-1" not in platform.job_names()
    wait_for(sagemaker, "remediation-dup-1")


def test_legacy_debugger_rules_report_sagemakers_rule_evaluation_statuses(platform_env):
    _, sagemaker, _ = platform_env
    name = "remediation-legacy-1"
    rules = [
        {
            "RuleConfigurationName": rule,
            "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
            "RuleParameters": {"rule_to_invoke": rule},
        }
        for rule in ("ExplodingTensor", "VanishingGradient")
    ]
    sagemaker.create_training_job(
        **request(
            name,
            mode="stop_training",
            DebugHookConfig={"S3OutputPath": bucket_layout.debug_output_uri(BUCKET, name)},
            DebugRuleConfigurations=rules,
        )
    )
    described = wait_for(sagemaker, name)
    assert shape_problems(described, DESCRIBE_OUTPUT) == []
    statuses = {
        item["RuleConfigurationName"]: item["RuleEvaluationStatus"] for item in described["DebugRuleEvaluationStatuses"]
    }
    assert statuses == {"ExplodingTensor": "IssuesFound", "VanishingGradient": "NoIssuesFound"}


def test_overlapping_process_lifetimes_count_once(tmp_path):
    from local_runtime.training_job import TrainingJobRecord
    from local_runtime.training_platform import LocalTrainingPlatform

    platform = LocalTrainingPlatform(tmp_path, lambda: None)
    for name, (start, end) in {"a": (10.0, 20.0), "b": (18.0, 25.0), "c": (30.0, 31.0)}.items():
        record = TrainingJobRecord(name=name, arn=name, request={}, job_dir=tmp_path, created=None)
        record.process_started, record.process_ended = start, end
        platform._jobs[name] = record
    assert platform.seconds_with_a_process_running() == pytest.approx(16.0)
