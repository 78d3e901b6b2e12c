"""Context values: the optional e-mail subscription, and bad values refused with the field and the fix."""

from __future__ import annotations

import json

import pytest
from cdk_synth import synthesize

from infra.app import build_app

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)


def test_notification_email_adds_one_email_subscription_to_the_topic(tmp_path):
    synthesized = synthesize(tmp_path, notification_email="ops@example.com")
    topic_id = synthesized.logical_id(synthesized.stack.notifications.topic)
    (subscription,) = synthesized.resources("AWS::SNS::Subscription").values()
    assert subscription["Properties"] == {
        "Endpoint": "ops@example.com",
        "Protocol": "email",
        "TopicArn": {"Ref": topic_id},
    }


def test_job_name_prefix_scopes_the_environment_and_every_training_job_grant(tmp_path):
    synthesized = synthesize(tmp_path, job_name_prefix="team-a")
    text = json.dumps(synthesized.template)
    assert "training-job/team-a*" in text and "training-job/remediation*" not in text
    assert "log-stream:team-a*" in text
    for function in synthesized.resources("AWS::Lambda::Function").values():
        assert function["Properties"]["Environment"]["Variables"]["JOB_NAME_PREFIX"] == "team-a"


def test_a_job_name_prefix_with_capitals_is_refused_naming_the_key_and_the_lower_case_fix(tmp_path):
    """SageMaker lower-cases training job ARNs and IAM matches resources case-sensitively: a grant on
    training-job/Team-A* would match no job, so the synth refuses it instead of deploying a stack that can't work."""
    with pytest.raises(ValueError) as raised:
        build_app({"job_name_prefix": "Team-A"}, outdir=str(tmp_path))
    message = str(raised.value)
    assert message.startswith("job_name_prefix:"), message
    assert "lower-case" in message and "-c job_name_prefix=team-a" in message, message


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"job_name_prefix": "bad_prefix!"}, "job_name_prefix"),
        ({"job_name_prefix": "x" * 30}, "job_name_prefix"),
        ({"notification_email": "not-an-address"}, "notification_email"),
        ({"debug_output_expiration_days": "soon"}, "debug_output_expiration_days"),
        ({"debug_output_expiration_days": 0}, "debug_output_expiration_days"),
        ({"allowed_instance_types": "ml.m5.xlarge,p4d"}, "allowed_instance_types"),
        ({"max_instance_count": "2.5"}, "max_instance_count"),
        ({"max_instance_count": 0}, "max_instance_count"),
        ({"max_instance_hours": "a day"}, "max_instance_hours"),
        ({"max_instance_hours": 0}, "max_instance_hours"),
        ({"legacy_sagemaker_debugger": "maybe"}, "legacy_sagemaker_debugger"),
    ],
)
def test_a_bad_context_value_is_refused_naming_it(tmp_path, context, named):
    with pytest.raises(ValueError) as raised:
        build_app(context, outdir=str(tmp_path))
    assert str(raised.value).startswith(named)


def test_an_asl_that_publishes_itself_gets_the_topic_substituted_and_only_that_grant(tmp_path):
    definition = {
        "StartAt": "Train",
        "States": {
            "Train": {"Type": "Task", "Resource": "${TrainFunctionArn}", "Next": "Wait"},
            "Wait": {"Type": "Task", "Resource": "${JobEventsFunctionArn}", "Next": "Monitor"},
            "Monitor": {"Type": "Task", "Resource": "${MonitorFunctionArn}", "Next": "Plan"},
            "Plan": {"Type": "Task", "Resource": "${PlanFunctionArn}", "Next": "Notify"},
            "Notify": {
                "Type": "Task",
                "Resource": "arn:aws:states:::sns:publish",
                "Parameters": {"TopicArn": "${NotificationTopicArn}", "Message.$": "$"},
                "End": True,
            },
        },
    }
    path = tmp_path / "publishing.asl.json"
    path.write_text(json.dumps(definition))
    synthesized = synthesize(tmp_path / "out", state_machine_definition=str(path))
    topic_id = synthesized.logical_id(synthesized.stack.notifications.topic)
    (machine,) = synthesized.resources("AWS::StepFunctions::StateMachine").values()
    assert machine["Properties"]["DefinitionSubstitutions"]["NotificationTopicArn"] == {"Ref": topic_id}
    role_id = synthesized.logical_id(synthesized.stack.workflow.state_machine.role)
    statements = [
        s
        for p in synthesized.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    (publish,) = [s for s in statements if s["Action"] == "sns:Publish"]
    assert publish["Resource"] == {"Ref": topic_id}


def test_the_deployed_powertools_layer_is_the_version_the_handlers_are_tested_with():
    from importlib.metadata import version
    from pathlib import Path

    from infra.functions import DEFAULT_POWERTOOLS_VERSION

    context = json.loads((Path(__file__).resolve().parents[2] / "cdk.json").read_text())["context"]
    tested = version("aws-lambda-powertools")
    assert context["powertools_version"] == DEFAULT_POWERTOOLS_VERSION == tested


def test_the_cost_guardrails_from_the_context_reach_iam_and_every_lambda(tmp_path):
    """IAM has no instance-count key and bounds MaxRuntimeInSeconds per job: 10 instance-hours over at most 4
    instances is 9,000 s a job, so 4 instances x 9,000 s is the 10 instance-hours (it was 36,000 s: a 4-instance job
    could reach 40 instance-hours)."""
    synthesized = synthesize(
        tmp_path,
        allowed_instance_types="ml.g5.xlarge, ml.m5.large",
        max_instance_count=4,
        max_instance_hours=10,
        max_concurrent_executions=3,
    )
    text = json.dumps(synthesized.template)
    assert '"sagemaker:InstanceTypes": ["ml.g5.xlarge", "ml.m5.large"]' in text
    assert '"sagemaker:MaxRuntimeInSeconds": "9000"' in text and 4 * 9000 == 10 * 3600
    for function in synthesized.resources("AWS::Lambda::Function").values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["ALLOWED_INSTANCE_TYPES"] == "ml.g5.xlarge,ml.m5.large"
        assert (variables["MAX_INSTANCE_COUNT"], variables["MAX_INSTANCE_HOURS"]) == ("4", "10")
        assert variables["MAX_CONCURRENT_EXECUTIONS"] == "3"
