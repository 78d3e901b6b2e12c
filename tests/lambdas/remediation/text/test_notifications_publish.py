import json

import boto3
import botocore.session
import pytest
from botocore.exceptions import ParamValidationError
from botocore.validate import validate_parameters
from moto import mock_aws

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.planning.planner import plan
from lambdas.remediation.text.notifications import (
    MAX_MESSAGE_BYTES,
    MAX_SUBJECT_LENGTH,
    Notification,
    completed,
    for_state,
    gave_up,
    issues_found,
    job_launched,
    publish_request,
    workflow_error,
)

TOPIC_ARN = "arn:aws:sns:us-east-1:123456789012:remediation-notifications"


@pytest.fixture(scope="module")
def publish_input_shape():
    return botocore.session.get_session().get_service_model("sns").operation_model("Publish").input_shape


@pytest.fixture
def journey(reference_state, record):
    """The states a reference execution goes through, with the notification each one gets."""
    launched = reference_state.with_new_attempt("remediation-resnet-1")
    relaunch = plan(record(reference_state))
    done = plan(
        record(
            relaunch,
            outcome="completed",
            metrics={"test:accuracy": 1.0, "train:loss": float("nan")},
            objective_value=1.0,
        )
    )
    budget = initial_state(
        {**reference_state.run_spec.model_dump(include={"bucket", "region", "sm_role"}), "max_num_retraining": 0}
    )
    spent = plan(record(budget))
    return {
        "job_launched": job_launched(launched),
        "issues_found": issues_found(relaunch),
        "completed": completed(done),
        "gave_up": gave_up(spent),
        "workflow_error": workflow_error(
            "States.TaskFailed",
            json.dumps(
                {
                    "errorType": "InvalidState",
                    "errorMessage": "invalid state payload: state.next_action: bad",
                    "stackTrace": [f"frame {index}" for index in range(50)],
                }
            ),
            state=relaunch,
        ),
    }


def test_subjects_are_readable_and_say_what_happened(journey):
    assert journey["issues_found"].subject == (
        "[remediation] ExplodingTensor at step 2: adding batch norm, relaunching (attempt 2/7)"
    )
    # whole settings, then how many more: a value cut short would read as another value
    assert journey["job_launched"].subject == (
        "[remediation] Attempt 1/7 launched: warmup_learning_rate=0.1, learning_rate=0.1 (+12 more)"
    )
    assert journey["completed"].subject == (
        "[remediation] Completed after 2 attempts: test:accuracy 1 (>= 0.9), with add_batch_norm=true"
    )
    assert journey["gave_up"].subject == (
        "[remediation] Gave up after 1 attempt: ExplodingTensor at step 2, relaunch budget spent"
    )
    assert journey["workflow_error"].subject.startswith(
        "[remediation] Workflow error: States.TaskFailed: invalid state payload"
    )
    for notification in journey.values():
        assert len(notification.subject) <= MAX_SUBJECT_LENGTH
        assert notification.subject.isascii() and notification.subject.isprintable()


def test_bodies_carry_what_subscribers_need(journey):
    issue = json.loads(journey["issues_found"].message())
    assert issue["rule"] == "ExplodingTensor" and issue["step"] == 2
    assert issue["decision"]["changes"] == {"add_batch_norm": {"before": False, "after": True}}
    assert issue["evidence"]["initial_gradient_norm"] == 512.3
    assert issue["next_run_spec"]["hyperparameters"]["add_batch_norm"] is True
    assert issue["objective"] == {"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9}
    assert issue["summary"] == issue["decision"]["reason"]  # the decision's reason (words: planning/test_reasons.py)

    done = json.loads(journey["completed"].message())
    assert done["final_hyperparameters"]["add_batch_norm"] is True
    assert done["objective_value"] == 1.0
    assert done["metrics"] == {"test:accuracy": 1.0, "train:loss": "NaN"}
    assert [line["outcome"] for line in done["attempts"]] == ["issues_found", "completed"]
    assert [line["remedy"] for line in done["attempts"]] == ["AddBatchNorm", "none"]

    gave_up_body = json.loads(journey["gave_up"].message())
    assert gave_up_body["summary"] == gave_up_body["end_reason"]  # the planner's end reason
    assert gave_up_body["history"]["num_retraining"] == 1 and gave_up_body["next_action"] == "end"

    error = json.loads(journey["workflow_error"].message())
    assert error["cause"]["errorType"] == "InvalidState"
    assert error["cause"]["stackTrace"] == [f"frame {index}" for index in range(45, 50)]
    assert error["attempt"] == 1


def test_publish_request_passes_botocores_validation_of_sns_publish(journey, publish_input_shape):
    for event_type, notification in journey.items():
        request = publish_request(TOPIC_ARN, notification)
        validate_parameters(request, publish_input_shape)
        assert request["MessageAttributes"]["event_type"] == {"DataType": "String", "StringValue": event_type}
        assert len(request["Message"].encode("utf-8")) <= MAX_MESSAGE_BYTES


def test_botocore_validation_is_a_real_check(journey, publish_input_shape):
    request = publish_request(TOPIC_ARN, journey["completed"])
    request["MessageAttributes"]["event_type"] = {"StringValue": "completed"}  # DataType missing
    with pytest.raises(ParamValidationError, match="DataType"):
        validate_parameters(request, publish_input_shape)


def test_subject_is_cleaned_for_sns():
    notification = Notification(
        "[remediation]\nrule\tfired \u2013 caf\u00e9 " + "x" * 300, {"event_type": "gave_up"}, "gave_up"
    )
    assert "\n" not in notification.subject and "\t" not in notification.subject
    assert notification.subject.isascii() and len(notification.subject) == MAX_SUBJECT_LENGTH
    assert notification.subject.endswith("...")
    with pytest.raises(ValueError, match="event_type"):
        Notification("x", {}, "something_else")  # type: ignore[arg-type]


def test_huge_causes_are_cut_below_the_sns_limit(reference_state, publish_input_shape):
    notification = workflow_error("States.Runtime", "\u00e9" * 2_000_000, state=reference_state)
    request = publish_request(TOPIC_ARN, notification)
    validate_parameters(request, publish_input_shape)
    assert len(request["Message"].encode("utf-8")) <= MAX_MESSAGE_BYTES
    oversized = Notification("big", {"event_type": "gave_up", "summary": "s", "attempts": ["a" * 300_000]}, "gave_up")
    body = json.loads(oversized.message())
    assert body["attempts"] == "(left out: message size limit)" and body["summary"] == "s"


def test_for_state_picks_the_event_from_the_state(journey, reference_state, record):
    launched = reference_state.with_new_attempt("remediation-resnet-1")
    assert for_state(launched).event_type == "job_launched"
    relaunch = plan(record(reference_state))
    assert for_state(relaunch).event_type == "issues_found"
    assert for_state(plan(record(relaunch, outcome="completed"))).event_type == "completed"
    assert for_state(plan(record(relaunch, outcome="algorithm_error"))).event_type == "gave_up"
    with pytest.raises(ValueError, match="next_action"):
        for_state(reference_state)


def test_publish_request_refuses_a_non_topic_arn(journey):
    with pytest.raises(ValueError, match="topic_arn"):
        publish_request("remediation-notifications", journey["completed"])


@mock_aws
def test_every_notification_is_delivered_through_sns_with_its_attribute(journey):
    sns = boto3.client("sns", region_name="us-east-1")
    sqs = boto3.client("sqs", region_name="us-east-1")
    topic_arn = sns.create_topic(Name="remediation-notifications")["TopicArn"]
    queue_url = sqs.create_queue(QueueName="subscriber")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"})
    for notification in journey.values():
        sns.publish(**publish_request(topic_arn, notification))
    received = {}
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])
        if not messages.get("Messages"):
            break
        for message in messages["Messages"]:
            received[message["MessageAttributes"]["event_type"]["StringValue"]] = json.loads(message["Body"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert set(received) == set(journey)
    assert all(body["event_type"] == event_type for event_type, body in received.items())


def test_gave_up_says_no_remedy_left_even_when_the_budget_is_also_spent(account_input, record, reference_evidence):
    state = initial_state(
        {
            **account_input,
            "add_batch_norm": True,
            "learning_rate": 0.00015,
            "max_num_retraining": 0,
            "hyperparameters": {"grad_clip": 1.0},
        }
    )
    evidence = {**reference_evidence, "phase": "main", "initial_gradient_norm": 7.5}
    ended = plan(record(state, phase="main", step=30, evidence=evidence))
    assert gave_up(ended).subject == "[remediation] Gave up after 1 attempt: ExplodingTensor at step 30, no remedy left"
