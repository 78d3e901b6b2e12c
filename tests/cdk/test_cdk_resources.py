"""Every resource of the stack with its encryption, logging, tracing and outputs (aws_cdk.assertions)."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Match

from contracts import bucket_layout
from contracts.stack_guardrails import DEFAULT_ALLOWED_INSTANCE_TYPES
from infra.functions import POWERTOOLS_METRICS_NAMESPACE, POWERTOOLS_SERVICE_NAME
from infra.outputs import (
    OUTPUT_BUCKET_NAME,
    OUTPUT_JOB_NAME_PREFIX,
    OUTPUT_SAGEMAKER_ROLE_ARN,
    OUTPUT_STATE_MACHINE_ARN,
    OUTPUT_TOPIC_ARN,
)
from lambdas.remediation.job import job_events
from lambdas.remediation.state import end_causes

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)


def test_resource_inventory(synthesized):
    counts = {}
    for resource in synthesized.template["Resources"].values():
        counts[resource["Type"]] = counts.get(resource["Type"], 0) + 1
    assert counts["AWS::Lambda::Function"] == 6  # train, monitor, plan, job-events, execution-cleanup, stack-teardown
    assert counts["AWS::StepFunctions::StateMachine"] == 1
    assert counts["AWS::Events::Rule"] == 2
    assert counts["AWS::S3::Bucket"] == 2  # artifacts + its access logs
    assert counts["AWS::SNS::Topic"] == 1
    assert counts["AWS::KMS::Key"] == 1
    assert counts["AWS::CloudWatch::Alarm"] == 5
    assert counts["AWS::SQS::Queue"] == 1  # the dead-letter queue
    assert counts["AWS::Logs::MetricFilter"] == 6  # a timeout line in each function's log
    # One custom resource, the stack's own teardown; no other (log retention, bucket auto-delete...) sneaked in.
    assert counts["Custom::StackTeardown"] == 1
    assert "Custom::LogRetention" not in counts and "AWS::CloudFormation::CustomResource" not in counts
    assert "AWS::Budgets::Budget" not in counts  # only with -c budget_limit_usd


def test_the_teardown_is_deleted_before_anything_a_run_needs(synthesized):
    """CloudFormation deletes in reverse dependency order: the teardown (which stops the running executions and
    their jobs) depends on the state machine, every other Lambda and its role, the EventBridge rules, the SageMaker
    role, the topic and the queue, so none of them goes before it has answered. Its own Lambda is its service token."""
    resources = synthesized.template["Resources"]
    (teardown_id,) = synthesized.resources("Custom::StackTeardown")
    teardown = resources[teardown_id]
    stack = synthesized.stack
    assert teardown["Properties"]["ServiceToken"] == {
        "Fn::GetAtt": [synthesized.logical_id(stack.functions.stack_teardown), "Arn"]
    }
    depends = set(teardown["DependsOn"])
    must_outlive = [
        stack.workflow.state_machine,
        stack.sagemaker.role,
        stack.notifications.topic,
        stack.dead_letters.queue,
        stack.events.job_state_change,
        stack.events.execution_ended,
        *(f for f in stack.functions.all if f is not stack.functions.stack_teardown),
        *(f.role for f in stack.functions.all if f is not stack.functions.stack_teardown),
    ]
    missing = [c.node.path for c in must_outlive if synthesized.logical_id(c) not in depends]
    assert not missing, missing
    function = resources[synthesized.logical_id(stack.functions.stack_teardown)]["Properties"]
    assert function["Timeout"] == 900  # Lambda's longest: a launch under way and the jobs' stops are waited out


def test_an_optional_budget_alarm_notifies_the_encrypted_topic(variant_synthesized):
    """-c budget_limit_usd=500: a monthly AWS Budgets alarm on the account's SageMaker spend (80% actual, 100%
    forecast) to the topic, which (and whose key) allow budgets.amazonaws.com for this budget only."""
    synthesized = variant_synthesized
    (budget,) = synthesized.resources("AWS::Budgets::Budget").values()
    data = budget["Properties"]["Budget"]
    assert data["BudgetLimit"] == {"Amount": 500, "Unit": "USD"} and data["TimeUnit"] == "MONTHLY"
    assert data["CostFilters"] == {"Service": ["Amazon SageMaker"]}
    topic_id = synthesized.logical_id(synthesized.stack.notifications.topic)
    notified = budget["Properties"]["NotificationsWithSubscribers"]
    assert [(n["Notification"]["NotificationType"], n["Notification"]["Threshold"]) for n in notified] == [
        ("ACTUAL", 80),
        ("FORECASTED", 100),
    ]
    assert all(n["Subscribers"] == [{"Address": {"Ref": topic_id}, "SubscriptionType": "SNS"}] for n in notified)
    topic_statements = [
        statement
        for policy in synthesized.resources("AWS::SNS::TopicPolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Principal") == {"Service": "budgets.amazonaws.com"}
    ]
    (publish,) = topic_statements
    assert publish["Action"] == "sns:Publish" and "aws:SourceArn" in publish["Condition"]["ArnLike"]
    key_id = synthesized.logical_id(synthesized.stack.notifications.key)
    key_statements = synthesized.template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    assert [s for s in key_statements if s.get("Principal") == {"Service": "budgets.amazonaws.com"}]


def test_artifacts_bucket_is_encrypted_private_versioned_logged_and_expires_debug_output(synthesized):
    artifacts = synthesized.logical_id(synthesized.stack.storage.artifacts_bucket)
    access_logs = synthesized.logical_id(synthesized.stack.storage.access_log_bucket)
    bucket = synthesized.template["Resources"][artifacts]["Properties"]
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"
    }
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert bucket["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": access_logs}
    rules = {rule["Id"]: rule for rule in bucket["LifecycleConfiguration"]["Rules"]}
    debug_rule = rules["ExpireDebugOutput"]
    assert debug_rule["Prefix"] == bucket_layout.DEBUG_OUTPUT_PREFIX == "debug-output/"
    assert debug_rule["Status"] == "Enabled" and debug_rule["ExpirationInDays"] == 30
    tokens_rule = rules["ExpireTaskTokens"]  # a token outlives its 48-hour execution by a day at most
    assert tokens_rule["Prefix"] == bucket_layout.TASK_TOKENS_PREFIX and tokens_rule["ExpirationInDays"] == 3


def test_both_buckets_refuse_plain_http(synthesized):
    for bucket in (synthesized.stack.storage.artifacts_bucket, synthesized.stack.storage.access_log_bucket):
        logical_id = synthesized.logical_id(bucket)
        policies = [
            p["Properties"]["PolicyDocument"]["Statement"]
            for p in synthesized.resources("AWS::S3::BucketPolicy").values()
            if p["Properties"]["Bucket"] == {"Ref": logical_id}
        ]
        assert policies, f"no bucket policy on {logical_id}"
        denies = [
            s
            for s in policies[0]
            if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        ]
        assert denies, f"{logical_id} accepts requests without TLS"


def test_topic_is_kms_encrypted_with_a_rotating_customer_key_and_tls_only(synthesized):
    key_id = synthesized.logical_id(synthesized.stack.notifications.key)
    synthesized.assertions.has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}}
    )
    synthesized.assertions.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    synthesized.assertions.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            }
        },
    )
    # CloudWatch alarms may use the key, or their notifications to the encrypted topic would be dropped.
    key_policy = synthesized.template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    assert any(
        s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"} and "kms:GenerateDataKey" in s["Action"]
        for s in key_policy
    )
    # No e-mail subscription unless the notification_email context value asks for one.
    assert not synthesized.resources("AWS::SNS::Subscription")


def test_lambdas_run_python_3_13_with_powertools_tracing_and_their_environment(synthesized):
    functions = synthesized.resources("AWS::Lambda::Function")
    topic_id = synthesized.logical_id(synthesized.stack.notifications.topic)
    handlers = sorted(f["Properties"]["Handler"] for f in functions.values())
    assert handlers == [
        "lambdas.execution_cleanup_handler.handler",
        "lambdas.job_events_handler.handler",
        "lambdas.monitor_handler.handler",
        "lambdas.plan_handler.handler",
        "lambdas.stack_teardown_handler.handler",
        "lambdas.train_handler.handler",
    ]
    bucket_id = synthesized.logical_id(synthesized.stack.storage.artifacts_bucket)
    layer_parameters = [
        name
        for name, p in synthesized.template["Parameters"].items()
        if p["Default"] == "/aws/service/powertools/python/x86_64/python3.13/3.37.0"
    ]
    assert len(layer_parameters) == 1
    for function in functions.values():
        properties = function["Properties"]
        assert properties["Runtime"] == "python3.13"
        assert properties["Architectures"] == ["x86_64"]
        assert properties["TracingConfig"] == {"Mode": "Active"}
        assert properties["Layers"] == [{"Ref": layer_parameters[0]}]
        assert properties["LoggingConfig"]["LogGroup"]["Ref"] in synthesized.resources("AWS::Logs::LogGroup")
        expected = {
            "NOTIFICATION_TOPIC_ARN": {"Ref": topic_id},
            "JOB_NAME_PREFIX": "remediation",
            "POWERTOOLS_SERVICE_NAME": POWERTOOLS_SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            # no event and no traced response in a log or a trace: payloads and task tokens stay out of them
            "POWERTOOLS_LOGGER_LOG_EVENT": "false",
            "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
            # the stack's guardrails (contracts.stack_guardrails), cdk.json's defaults
            "ALLOWED_INSTANCE_TYPES": ",".join(DEFAULT_ALLOWED_INSTANCE_TYPES),
            "MAX_INSTANCE_COUNT": "2",
            "MAX_INSTANCE_HOURS": "48",
            "MAX_CONCURRENT_EXECUTIONS": "2",
            "LEGACY_SAGEMAKER_DEBUGGER": "disabled",
            "SECRET_EVIDENCE_PATHS": "on",
        }
        if properties["Handler"] == "lambdas.job_events_handler.handler":  # where the task tokens are kept
            expected["ARTIFACTS_BUCKET"] = {"Ref": bucket_id}
        if properties["Handler"] == "lambdas.stack_teardown_handler.handler":  # whose executions it stops
            expected["STATE_MACHINE_ARN"] = {"Ref": synthesized.logical_id(synthesized.stack.workflow.state_machine)}
        assert properties["Environment"]["Variables"] == expected
    for log_group in synthesized.resources("AWS::Logs::LogGroup").values():
        assert log_group["Properties"]["RetentionInDays"] == 90


def test_the_handlers_never_trace_a_response():
    """Powertools' Tracer records what a traced function returns unless told not to: a payload (256 KiB, over
    X-Ray's 64 KB segment) and a wait's task token. Every tracer decorator of every handler says
    capture_response=False."""
    import ast
    from pathlib import Path

    def is_tracer_capture(node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("capture_")
            and isinstance(node.value, ast.Name)
            and node.value.id == "tracer"
        )

    handlers = sorted((Path(__file__).resolve().parents[2] / "lambdas").glob("*_handler.py"))
    assert len(handlers) == 6
    for path in handlers:
        functions = [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.FunctionDef)]
        decorators = [d for f in functions for d in f.decorator_list]
        traced = [d for d in decorators if is_tracer_capture(d.func if isinstance(d, ast.Call) else d)]
        assert traced, f"{path.name}: its handler is not traced"
        for decorator in traced:
            assert isinstance(decorator, ast.Call), f"{path.name}: a tracer decorator without capture_response=False"
            keywords = {keyword.arg: keyword.value for keyword in decorator.keywords}
            assert isinstance(keywords.get("capture_response"), ast.Constant), path.name
            assert keywords["capture_response"].value is False, path.name


def test_the_evidence_outlives_the_stack(synthesized):
    """The dead-letter queue and every log group are kept when the stack is deleted (they went with it: what
    failed and what ran could no longer be read)."""
    resources = synthesized.template["Resources"]
    kept = [
        *synthesized.resources("AWS::Logs::LogGroup"),
        synthesized.logical_id(synthesized.stack.dead_letters.queue),
    ]
    assert len(kept) == 8  # six Lambdas, the state machine, the queue
    for logical_id in kept:
        assert resources[logical_id].get("DeletionPolicy") == "Retain", logical_id
        assert resources[logical_id].get("UpdateReplacePolicy") == "Retain", logical_id


def test_state_machine_logs_every_event_traces_and_inlines_the_definition(synthesized):
    machines = synthesized.resources("AWS::StepFunctions::StateMachine")
    (machine,) = machines.values()
    properties = machine["Properties"]
    assert properties["StateMachineType"] == "STANDARD"
    assert properties["TracingConfiguration"] == {"Enabled": True}
    # every event (cdk-nag's SF1), without execution data: no payload, no task token in the log
    assert properties["LoggingConfiguration"]["Level"] == "ALL"
    assert properties["LoggingConfiguration"]["IncludeExecutionData"] is False
    log_group_id = properties["LoggingConfiguration"]["Destinations"][0]["CloudWatchLogsLogGroup"]["LogGroupArn"][
        "Fn::GetAtt"
    ][0]
    log_group_name = synthesized.template["Resources"][log_group_id]["Properties"]["LogGroupName"]
    assert json.dumps(log_group_name).count("/aws/vendedlogs/states/") == 1
    assert "AWS::StackId" in json.dumps(log_group_name)  # kept after a delete, not in the way of the next stack
    # Inline, byte for byte the ASL file: cfn-lint and these tests see the definition (no S3 location).
    assert "DefinitionS3Location" not in properties
    assert properties["DefinitionString"] == synthesized.definition_path.read_text(encoding="utf-8")


def test_the_event_rules_wake_the_wait_on_our_jobs_final_states_and_clean_up_after_this_machines_bad_ends(
    synthesized,
):
    """Two rules on the default bus, each with the pattern the local runtime matches (lambdas.remediation.job.job_events)
    and one Lambda target, retried, whose invoke permission names that rule only."""
    machine_id = synthesized.logical_id(synthesized.stack.workflow.state_machine)
    functions = synthesized.stack.functions
    rules = {
        rule["Properties"]["EventPattern"]["detail-type"][0]: rule
        for rule in synthesized.resources("AWS::Events::Rule").values()
    }
    assert set(rules) == {"SageMaker Training Job State Change", "Step Functions Execution Status Change"}
    jobs = rules["SageMaker Training Job State Change"]["Properties"]
    assert jobs["EventPattern"] == job_events.training_job_state_change_pattern("remediation")
    assert jobs["EventPattern"]["detail"]["TrainingJobStatus"] == ["Completed", "Failed", "Stopped"]
    executions = rules["Step Functions Execution Status Change"]["Properties"]
    assert executions["EventPattern"] == {
        **job_events.execution_status_change_pattern("MACHINE"),
        "detail": {"stateMachineArn": [{"Ref": machine_id}], "status": ["FAILED", "TIMED_OUT", "ABORTED"]},
    }
    for rule, function in ((jobs, functions.job_events), (executions, functions.execution_cleanup)):
        assert rule["State"] == "ENABLED"
        (target,) = rule["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": [synthesized.logical_id(function), "Arn"]}
        assert target["RetryPolicy"] == {"MaximumRetryAttempts": 4, "MaximumEventAgeInSeconds": 7200}
    permissions = [
        p["Properties"]
        for p in synthesized.resources("AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "events.amazonaws.com"
    ]
    assert len(permissions) == 2
    rule_ids = {rule_id for rule_id, r in synthesized.resources("AWS::Events::Rule").items()}
    for permission in permissions:
        assert permission["SourceArn"]["Fn::GetAtt"][0] in rule_ids  # only its own rule may invoke it


def _alarms(synthesized) -> dict[str, dict]:
    stack_name = synthesized.stack.stack_name
    return {
        a["Properties"]["AlarmName"].removeprefix(f"{stack_name}-"): a["Properties"]
        for a in synthesized.resources("AWS::CloudWatch::Alarm").values()
    }


def test_alarms_watch_what_no_one_would_otherwise_see_and_notify_the_topic(synthesized):
    """An execution that ended otherwise than expected (the execution-cleanup Lambda counts every such end, whatever
    state it happened in), a timed-out execution (Step Functions' own count, beside it), an undelivered event or
    failed asynchronous invocation (the dead-letter queue), an error a handler counted itself as it raised, a Lambda
    timeout, a Lambda throttle. A run that gives up and a deliberate stop alarm no one: there is no alarm on
    ExecutionsFailed or ExecutionsAborted."""
    machine_id = synthesized.logical_id(synthesized.stack.workflow.state_machine)
    topic_id = synthesized.logical_id(synthesized.stack.notifications.topic)
    alarms = _alarms(synthesized)
    assert set(alarms) == {"ExecutionsTimedOut", "UndeliveredEvents", "WorkflowErrors", "LambdaErrors", "LambdaThrottles"}
    for alarm in alarms.values():
        assert alarm["Threshold"] == 1 and alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["AlarmActions"] == [{"Ref": topic_id}]
        assert alarm["TreatMissingData"] == "notBreaching"
        assert alarm.get("MetricName") not in ("ExecutionsFailed", "ExecutionsAborted")
    assert alarms["ExecutionsTimedOut"]["MetricName"] == "ExecutionsTimedOut"
    assert alarms["ExecutionsTimedOut"]["Namespace"] == "AWS/States"
    assert alarms["ExecutionsTimedOut"]["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": machine_id}}]
    queue_id = synthesized.logical_id(synthesized.stack.dead_letters.queue)
    assert alarms["UndeliveredEvents"]["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarms["UndeliveredEvents"]["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}
    ]
    workflow_inputs = {m["Id"]: m["MetricStat"]["Metric"] for m in alarms["WorkflowErrors"]["Metrics"] if "MetricStat" in m}
    assert {m["MetricName"] for m in workflow_inputs.values()} == {
        end_causes.UNEXPECTED_WORKFLOW_ERRORS,
        end_causes.NOTIFICATIONS_NOT_SENT,
    }
    for metric in workflow_inputs.values():
        assert metric["Namespace"] == POWERTOOLS_METRICS_NAMESPACE
        assert metric["Dimensions"] == [{"Name": "service", "Value": POWERTOOLS_SERVICE_NAME}]
    # Lambda errors: what the handlers count as they raise, in the period it happened (no Errors minus
    # TransientFaultsDeferred: a long invocation's two metrics fell in different periods), and the timeouts a
    # metric filter reads from each function's log
    (expression,) = [m for m in alarms["LambdaErrors"]["Metrics"] if "Expression" in m]
    assert expression["Expression"] == "FILL(unhandled, 0) + FILL(timeouts, 0)"
    inputs = {m["Id"]: m["MetricStat"]["Metric"] for m in alarms["LambdaErrors"]["Metrics"] if "MetricStat" in m}
    assert inputs["unhandled"]["MetricName"] == end_causes.UNHANDLED_ERRORS
    assert inputs["unhandled"]["Dimensions"] == [{"Name": "service", "Value": POWERTOOLS_SERVICE_NAME}]
    assert inputs["timeouts"] == {"Namespace": POWERTOOLS_METRICS_NAMESPACE, "MetricName": "LambdaTimeouts"}
    assert {m["MetricName"] for m in inputs.values()}.isdisjoint({"Errors", end_causes.TRANSIENT_FAULTS_DEFERRED})
    filters = list(synthesized.resources("AWS::Logs::MetricFilter").values())
    functions = synthesized.stack.functions.all
    assert sorted(f["Properties"]["LogGroupName"]["Ref"] for f in filters) == sorted(
        synthesized.stack.resolve(f.log_group.node.default_child.logical_id) for f in functions
    )
    for metric_filter in filters:
        assert metric_filter["Properties"]["FilterPattern"] == '"Task timed out after"'
        (transformation,) = metric_filter["Properties"]["MetricTransformations"]
        assert transformation["MetricName"] == "LambdaTimeouts" and transformation["MetricValue"] == "1"
    throttles = {m["Id"]: m["MetricStat"]["Metric"] for m in alarms["LambdaThrottles"]["Metrics"] if "MetricStat" in m}
    assert {m["MetricName"] for m in throttles.values()} == {"Throttles"}
    assert {m["Dimensions"][0]["Value"]["Ref"] for m in throttles.values()} == {
        synthesized.logical_id(f) for f in functions
    }


def test_undelivered_events_and_failed_asynchronous_invocations_go_to_the_dead_letter_queue(synthesized):
    queue_id = synthesized.logical_id(synthesized.stack.dead_letters.queue)
    queue = synthesized.template["Resources"][queue_id]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True and queue["MessageRetentionPeriod"] == 14 * 24 * 3600
    for rule in synthesized.resources("AWS::Events::Rule").values():
        (target,) = rule["Properties"]["Targets"]
        assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [queue_id, "Arn"]}}
        assert target["RetryPolicy"]["MaximumRetryAttempts"] == 4
    configs = synthesized.resources("AWS::Lambda::EventInvokeConfig").values()
    functions = {synthesized.logical_id(f) for f in (synthesized.stack.functions.job_events, synthesized.stack.functions.execution_cleanup)}
    assert {c["Properties"]["FunctionName"]["Ref"] for c in configs} == functions
    for config in configs:
        assert config["Properties"]["DestinationConfig"] == {
            "OnFailure": {"Destination": {"Fn::GetAtt": [queue_id, "Arn"]}}
        }
        assert config["Properties"]["MaximumRetryAttempts"] == 2


def _alarm_order(synthesized):
    """The order the stack lists its alarms in (infra/alarms.py)."""
    order = [f"{synthesized.stack.stack_name}-{alarm.node.id}" for alarm in synthesized.stack.alarms.alarms]
    return order.index


def _cloudwatch_statements(statements: list[dict]) -> list[dict]:
    return [s for s in statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]


def test_the_alarms_can_publish_to_the_encrypted_topic(synthesized):
    """CloudWatch publishes an alarm's notification as cloudwatch.amazonaws.com: the topic policy must allow
    sns:Publish and the topic's key policy kms:GenerateDataKey/Decrypt (SNS developer guide, "Enable
    compatibility between event sources from AWS services and encrypted topics"), each scoped to this account
    and to these alarms (aws:SourceAccount, aws:SourceArn) against the confused deputy."""
    topic_id = synthesized.logical_id(synthesized.stack.notifications.topic)
    key_id = synthesized.logical_id(synthesized.stack.notifications.key)
    alarms = synthesized.resources("AWS::CloudWatch::Alarm").values()
    alarm_names = [alarm["Properties"]["AlarmName"] for alarm in alarms]
    assert len(alarm_names) == 5 and all(isinstance(name, str) for name in alarm_names)

    def alarm_arn(name: str) -> dict:
        return {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":cloudwatch:",
                    {"Ref": "AWS::Region"},
                    ":",
                    {"Ref": "AWS::AccountId"},
                    f":alarm:{name}",
                ],
            ]
        }

    expected_condition = {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {"aws:SourceArn": [alarm_arn(name) for name in sorted(alarm_names, key=_alarm_order(synthesized))]},
    }
    topic_statements = [
        statement
        for policy in synthesized.resources("AWS::SNS::TopicPolicy").values()
        if {"Ref": topic_id} in policy["Properties"]["Topics"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    (publish,) = _cloudwatch_statements(topic_statements)
    assert publish["Effect"] == "Allow" and publish["Action"] == "sns:Publish"
    assert publish["Resource"] == {"Ref": topic_id}
    assert publish["Condition"] == expected_condition
    key_statements = synthesized.template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    (use_key,) = _cloudwatch_statements(key_statements)
    assert use_key["Effect"] == "Allow" and sorted(use_key["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
    assert use_key["Condition"] == expected_condition


def test_sagemaker_role_is_assumable_only_by_sagemaker_of_this_account(synthesized):
    role_id = synthesized.logical_id(synthesized.stack.sagemaker.role)
    trust = synthesized.template["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust == [
        {
            "Action": "sts:AssumeRole",
            "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}},
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
        }
    ]


def test_outputs_are_the_ones_the_cloud_cli_reads(synthesized):
    outputs = synthesized.template["Outputs"]
    expected = {
        OUTPUT_STATE_MACHINE_ARN: synthesized.stack.workflow.state_machine,
        OUTPUT_TOPIC_ARN: synthesized.stack.notifications.topic,
        OUTPUT_BUCKET_NAME: synthesized.stack.storage.artifacts_bucket,
    }
    for key, construct in expected.items():
        assert outputs[key]["Value"] == {"Ref": synthesized.logical_id(construct)}
    role_id = synthesized.logical_id(synthesized.stack.sagemaker.role)
    assert outputs[OUTPUT_SAGEMAKER_ROLE_ARN]["Value"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert outputs[OUTPUT_JOB_NAME_PREFIX]["Value"] == "remediation"
