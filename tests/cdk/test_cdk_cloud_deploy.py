"""The synthesized template deployed into moto's CloudFormation, and the cloud CLI driven against that stack."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import tarfile
import time
from pathlib import Path

import boto3
import numpy as np
import pytest
from cdk_moto import ACCOUNT, REGION, deploy
from moto import mock_aws

from contracts import bucket_layout
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.state.attempts import Attempt, Decision, Issue
from remediate import cloud_commands

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)

STACK_NAME = "TrainingRemediation"


@pytest.fixture
def aws(monkeypatch, offline_aws_credentials):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield


@pytest.fixture
def deployed(aws, synthesized):
    started = time.perf_counter()
    description = deploy(synthesized.outdir, STACK_NAME, synthesized.template)
    description["deploy_seconds"] = time.perf_counter() - started
    return description


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="remediate")
    cloud_commands.register(parser.add_subparsers(dest="group", required=True))
    arguments = parser.parse_args(list(argv))
    return arguments.handler(arguments)


def test_the_template_deploys_to_create_complete_with_the_resources_it_declares(deployed, synthesized):
    assert deployed["StackStatus"] == "CREATE_COMPLETE", deployed.get("StackStatusReason")
    # Everything else is really created by moto; these types it accepts without creating.
    assert deployed["SkippedByMoto"] == [
        "AWS::CloudWatch::Alarm",
        "AWS::Lambda::EventInvokeConfig",
        "AWS::Logs::MetricFilter",
        "AWS::S3::BucketPolicy",
        "AWS::SNS::TopicPolicy",
        "AWS::SQS::QueuePolicy",
    ]
    # The teardown's custom resource, answered by its real handler (the Create does nothing but answer).
    answers = deployed["CustomResourcesAnswered"]
    (teardown,) = synthesized.resources("Custom::StackTeardown")
    assert answers and {answer["LogicalResourceId"] for answer in answers} == {teardown}
    assert all(a["Status"] == "SUCCESS" and a["PhysicalResourceId"].endswith("/teardown") for a in answers), answers
    outputs = {o["OutputKey"]: o["OutputValue"] for o in deployed["Outputs"]}
    assert outputs["JobNamePrefix"] == "remediation"

    lambda_client = boto3.client("lambda", region_name=REGION)
    functions = {f["Handler"]: f for f in lambda_client.list_functions()["Functions"]}
    assert set(functions) == {
        "lambdas.train_handler.handler",
        "lambdas.monitor_handler.handler",
        "lambdas.plan_handler.handler",
        "lambdas.job_events_handler.handler",
        "lambdas.execution_cleanup_handler.handler",
        "lambdas.stack_teardown_handler.handler",
    }
    for function in functions.values():
        assert function["Runtime"] == "python3.13"
        assert function["Environment"]["Variables"]["NOTIFICATION_TOPIC_ARN"] == outputs["NotificationTopicArn"]
        # (moto drops layers it does not hold itself, so the layer is asserted on the template instead)

    rules = boto3.client("events", region_name=REGION).list_rules()["Rules"]
    patterns = sorted(json.loads(rule["EventPattern"])["detail-type"][0] for rule in rules)
    assert patterns == ["SageMaker Training Job State Change", "Step Functions Execution Status Change"]
    machine = boto3.client("stepfunctions", region_name=REGION).describe_state_machine(
        stateMachineArn=outputs["StateMachineArn"]
    )
    # moto stores DefinitionString as given (it does not apply DefinitionSubstitutions; the definition test does).
    assert json.loads(machine["definition"]) == json.loads(synthesized.definition_path.read_text())
    # (moto's CloudFormation ignores LoggingConfiguration/TracingConfiguration: asserted on the template)

    s3 = boto3.client("s3", region_name=REGION)
    encryption = s3.get_bucket_encryption(Bucket=outputs["ArtifactsBucketName"])["ServerSideEncryptionConfiguration"]
    assert encryption["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    # (moto's CloudFormation skips versioning, logging and lifecycle: asserted on the template)
    sns = boto3.client("sns", region_name=REGION)
    attributes = sns.get_topic_attributes(TopicArn=outputs["NotificationTopicArn"])["Attributes"]
    assert attributes["KmsMasterKeyId"].startswith(f"arn:aws:kms:{REGION}:{ACCOUNT}:key/")
    role = boto3.client("iam").get_role(RoleName=outputs["SageMakerRoleArn"].split("/")[-1])["Role"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "sagemaker.amazonaws.com"}


def test_start_fills_bucket_role_and_region_from_the_stack_and_sends_what_the_local_runtime_accepts(
    deployed, tmp_path, capsys
):
    run_spec = {"init_warmup_learning_rate": 0.1, "add_batch_norm": 0, "num_epochs": 2, "policy": "anchor"}
    run_spec_file = tmp_path / "run_spec.json"
    run_spec_file.write_text(json.dumps(run_spec))

    assert run_cli("cloud", "start", "--run-spec", str(run_spec_file), "--name", "first-try", "--json") == 0
    printed = json.loads(capsys.readouterr().out)

    outputs = {o["OutputKey"]: o["OutputValue"] for o in deployed["Outputs"]}
    execution = boto3.client("stepfunctions", region_name=REGION).describe_execution(
        executionArn=printed["executionArn"]
    )
    assert execution["stateMachineArn"] == outputs["StateMachineArn"]
    assert execution["name"] == "first-try"
    sent = json.loads(execution["input"])
    assert sent == {
        **run_spec,
        "bucket": outputs["ArtifactsBucketName"],
        "region": REGION,
        "sm_role": outputs["SageMakerRoleArn"],
    }
    # The same validation the local runtime's first step applies accepts it.
    state = initial_state(sent)
    assert state.run_spec.bucket == outputs["ArtifactsBucketName"] and state.policy == "anchor"
    assert state.run_spec.sm_role == outputs["SageMakerRoleArn"]


def test_start_with_a_users_script_uploads_its_directory_and_data_then_starts_with_their_uris(
    deployed, tmp_path, capsys
):
    example = Path(__file__).resolve().parents[2] / "examples" / "mlp"
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "x.npy", np.zeros((8, 4), np.float32))
    np.save(data / "y.npy", np.zeros(8, np.int64))
    spec = json.loads((example / "run_spec.json").read_text())
    spec["source_dir"] = str(example)
    run_spec_file = tmp_path / "run_spec.json"
    run_spec_file.write_text(json.dumps(spec))

    arguments = ["cloud", "start", "--run-spec", str(run_spec_file), "--channel", f"train={data}", "--json"]
    assert run_cli(*arguments, "--hyperparameters", "lr=0.5") == 0
    sent = json.loads(capsys.readouterr().out)["input"]
    bucket = {o["OutputKey"]: o["OutputValue"] for o in deployed["Outputs"]}["ArtifactsBucketName"]
    assert sent["source_dir"].startswith(f"s3://{bucket}/code/mlp-") and sent["source_dir"].endswith(
        "/sourcedir.tar.gz"
    )
    assert sent["channels"]["train"].startswith(f"s3://{bucket}/data/train-")
    assert sent["hyperparameters"] == {"lr": 0.5, "grad-clip": 0, "epochs": 5}
    s3 = boto3.client("s3", region_name=REGION)
    key = sent["source_dir"].split(f"s3://{bucket}/", 1)[1]
    with tarfile.open(fileobj=io.BytesIO(s3.get_object(Bucket=bucket, Key=key)["Body"].read())) as archive:
        names = archive.getnames()
    assert {"train.py", "remediation_launcher.py", "debugger/launcher.py", "contracts/job.py"} <= set(names)
    prefix = sent["channels"]["train"].split(f"s3://{bucket}/", 1)[1]
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
    assert sorted(item["Key"].rsplit("/", 1)[1] for item in listed) == ["x.npy", "y.npy"]
    assert initial_state(sent).policy == "declared"


def test_upload_source_with_a_users_directory_prints_the_uri_to_use(deployed, capsys):
    example = Path(__file__).resolve().parents[2] / "examples" / "mlp"
    assert run_cli("cloud", "upload-source", "--source-dir", str(example), "--entry-point", "train.py") == 0
    printed = capsys.readouterr().out
    assert '"source_dir": "s3://' in printed and '"entry_point": "train.py"' in printed
    assert run_cli("cloud", "upload-source", "--source-dir", str(example), "--entry-point", "missing.py") == 2
    assert "entry_point missing.py: not found in --source-dir" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("run_spec", "named"),
    [
        ({"learning_rate": -1}, "learning_rate"),
        ({"bucket": "some-other-bucket"}, "bucket: the run_spec says 'some-other-bucket'"),
        ({"surprise": 1}, "surprise: is not a known key"),
    ],
)
def test_start_refuses_a_bad_run_spec_naming_the_field_and_starts_nothing(deployed, tmp_path, capsys, run_spec, named):
    run_spec_file = tmp_path / "run_spec.json"
    run_spec_file.write_text(json.dumps(run_spec))
    assert run_cli("cloud", "start", "--run-spec", str(run_spec_file)) == 2
    assert named in capsys.readouterr().err
    client = boto3.client("stepfunctions", region_name=REGION)
    machine = {o["OutputKey"]: o["OutputValue"] for o in deployed["Outputs"]}["StateMachineArn"]
    assert client.list_executions(stateMachineArn=machine)["executions"] == []


def test_commands_name_a_missing_stack_and_a_stack_without_the_outputs(aws, tmp_path, capsys):
    run_spec_file = tmp_path / "run_spec.json"
    run_spec_file.write_text("{}")
    assert run_cli("cloud", "start", "--run-spec", str(run_spec_file), "--stack-name", "Nowhere") == 2
    error = capsys.readouterr().err
    assert "stack 'Nowhere' not found in us-east-1" in error and "cdk deploy" in error

    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="Unrelated",
        TemplateBody=json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}),
    )
    assert run_cli("cloud", "upload-source", "--stack-name", "Unrelated") == 2
    error = capsys.readouterr().err
    assert "has no output StateMachineArn, ArtifactsBucketName, SageMakerRoleArn" in error


def test_upload_source_and_prepare_data_put_the_layout_the_jobs_read(deployed, capsys):
    bucket = {o["OutputKey"]: o["OutputValue"] for o in deployed["Outputs"]}["ArtifactsBucketName"]
    assert run_cli("cloud", "upload-source") == 0
    assert run_cli("cloud", "prepare-data", "--synthetic", "--train-samples", "32", "--test-samples", "16") == 0
    s3 = boto3.client("s3", region_name=REGION)
    archive = s3.get_object(Bucket=bucket, Key=bucket_layout.SOURCE_ARCHIVE_KEY)["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(archive))) as tar:
        names = tar.getnames()
    assert "train.py" in names and "model/train.py" in names and "contracts/rule_status.py" in names
    for prefix, count in ((bucket_layout.TRAIN_CHANNEL_PREFIX, 32), (bucket_layout.TEST_CHANNEL_PREFIX, 16)):
        x = np.load(io.BytesIO(s3.get_object(Bucket=bucket, Key=prefix + "x.npy")["Body"].read()))
        y = np.load(io.BytesIO(s3.get_object(Bucket=bucket, Key=prefix + "y.npy")["Body"].read()))
        assert x.shape == (count, 32, 32, 3) and x.dtype == np.uint8 and y.shape == (count,)


def test_status_reads_progress_and_attempts_from_a_real_moto_execution(aws, capsys):
    """A one-state machine whose output is a real payload, run by moto's interpreter; status reads it back."""
    state = initial_state(
        {"bucket": "artifacts-bucket", "region": REGION, "sm_role": f"arn:aws:iam::{ACCOUNT}:role/SageMaker"}
    )
    state.attempts.append(
        Attempt(
            number=1,
            job_name="remediation-first-try-1",
            hyperparameters=state.run_spec.hyperparameters,
            outcome="issues_found",
            issue=Issue(rule="ExplodingTensor", step=3),
            decision=Decision(remedy="add_batch_norm", reason="init-scale gradient norm 412", next_action="launch_new"),
        )
    )
    state.history.latest_job_name = "remediation-first-try-1"
    payload = {"state": state.model_dump(mode="json")}
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    iam = boto3.client("iam")
    role = iam.create_role(RoleName="machine", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        client = boto3.client("stepfunctions", region_name=REGION)
        machine = client.create_state_machine(
            name="status-probe",
            roleArn=role,
            definition=json.dumps(
                {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "Result": payload, "End": True}}}
            ),
        )["stateMachineArn"]
        cloudformation.create_stack(
            StackName=STACK_NAME,
            TemplateBody=json.dumps(
                {
                    "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                    "Outputs": {
                        "StateMachineArn": {"Value": machine},
                        "ArtifactsBucketName": {"Value": "artifacts-bucket"},
                        "SageMakerRoleArn": {"Value": role},
                    },
                }
            ),
        )
        client.start_execution(stateMachineArn=machine, name="probe-run", input="{}")
        deadline = time.monotonic() + 300
        while (
            client.describe_execution(executionArn=machine.replace("stateMachine", "execution") + ":probe-run")[
                "status"
            ]
            == "RUNNING"
        ):
            assert time.monotonic() < deadline, "moto's interpreter never finished a one-state machine"
            time.sleep(0.05)
        assert run_cli("cloud", "status", "probe-run", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "SUCCEEDED"
    assert summary["current_state"] == "Done"
    assert summary["history"]["latest_job_name"] == "remediation-first-try-1"
    assert summary["attempts"] == [
        {
            "number": 1,
            "job_name": "remediation-first-try-1",
            "outcome": "issues_found",
            "issue": "ExplodingTensor at step 3",
            "remedy": "add_batch_norm",
            "reason": "init-scale gradient norm 412",
        }
    ]


def test_a_bad_run_spec_field_is_reported_before_any_stack_lookup(aws, tmp_path, capsys):
    run_spec_file = tmp_path / "run_spec.json"
    run_spec_file.write_text(json.dumps({"init_warmup_learning_rate": -1, "depth": 21}))
    assert run_cli("cloud", "start", "--run-spec", str(run_spec_file), "--stack-name", "Nowhere") == 2
    error = capsys.readouterr().err
    assert "init_warmup_learning_rate: must be > 0 (got -1)" in error and "depth" in error
    assert "not found" not in error
