"""Least privilege: every IAM statement of the stack, scoped as the design says, and matched to the handlers' calls."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import botocore.session
import pytest
from botocore import xform_name
from cdk_synth import acknowledgements

from contracts import bucket_layout
from contracts.stack_guardrails import DEFAULT_ALLOWED_INSTANCE_TYPES

pytestmark = pytest.mark.cdk  # synthesizes through jsii (Node.js)

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Actions AWS documents as taking no resource ARN ("*" is the only valid Resource).
RESOURCE_STAR_ONLY = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
    "ecr:GetAuthorizationToken",
    "cloudwatch:PutMetricData",
    "sagemaker:ListTrainingJobs",
}
#: What every Lambda role has: its own log group, and X-Ray (active tracing).
EVERY_LAMBDA = {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTelemetryRecords", "xray:PutTraceSegments"}
#: Publishing to the encrypted topic.
PUBLISH = {"sns:Publish", "kms:Decrypt", "kms:GenerateDataKey"}
#: An asynchronously invoked Lambda's on-failure destination (the dead-letter queue), as CDK grants it.
ASYNC_FAILURES = {"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
#: The IAM prefix of each service the handlers may call, by botocore service name.
IAM_PREFIX = {"sagemaker": "sagemaker", "s3": "s3", "sns": "sns", "stepfunctions": "states", "cloudwatch": "cloudwatch"}
#: boto3 method names that are also everyday Python methods (re.Pattern.search, dict.get...): not counted.
GENERIC_METHOD_NAMES = {"search", "get", "update", "delete", "copy", "select"}


def _as_list(value):
    return value if isinstance(value, list) else [value]


def statements_by_role(synthesized) -> dict[str, list[dict]]:
    by_role: dict[str, list[dict]] = {}
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        for role in policy["Properties"]["Roles"]:
            by_role.setdefault(role["Ref"], []).extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return by_role


def role_statements(synthesized, role) -> list[dict]:
    return statements_by_role(synthesized)[synthesized.stack.resolve(role.node.default_child.logical_id)]


def granted(statements, action) -> list[dict]:
    return [s for s in statements if s["Effect"] == "Allow" and action in _as_list(s["Action"])]


def bucket_object_arn(synthesized, prefix: str) -> dict:
    bucket = synthesized.logical_id(synthesized.stack.storage.artifacts_bucket)
    return {"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, f"/{prefix}*"]]}


def training_job_arn() -> dict:
    return {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":sagemaker:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":training-job/remediation*",
            ],
        ]
    }


def test_no_wildcard_action_and_no_star_resource_beyond_what_the_service_requires(synthesized):
    acknowledged = acknowledgements(synthesized)
    for role_id, statements in statements_by_role(synthesized).items():
        for statement in statements:
            assert statement["Effect"] == "Allow"
            for action in _as_list(statement["Action"]):
                assert "*" not in action, f"{role_id}: wildcard action {action}"
            if "*" in _as_list(statement["Resource"]):
                extra = set(_as_list(statement["Action"])) - RESOURCE_STAR_ONLY
                assert not extra, f"{role_id}: Resource '*' for {sorted(extra)}, which take resource ARNs"
                path = _construct_path_of_role(synthesized, role_id)
                assert "AwsSolutions::AwsSolutions-IAM5[Resource::*]" in acknowledged.get(path, {}), (
                    f"{path} uses Resource '*' without an acknowledgement stating why"
                )


def test_put_metric_data_is_limited_to_the_training_namespace(synthesized):
    (statement,) = granted(role_statements(synthesized, synthesized.stack.sagemaker.role), "cloudwatch:PutMetricData")
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": "/aws/sagemaker/TrainingJobs"}}


def test_train_lambda_creates_only_prefixed_jobs_tags_only_on_create_and_passes_only_the_sagemaker_role(synthesized):
    statements = role_statements(synthesized, synthesized.stack.functions.train.role)
    for action in ("sagemaker:CreateTrainingJob", "sagemaker:DescribeTrainingJob"):
        (statement,) = granted(statements, action)
        assert statement["Resource"] == training_job_arn()
    # The cost guardrails, in IAM: only the allowed instance types, named in every request, and a runtime that keeps
    # a job of the most instances within the instance-hours (contracts.stack_guardrails; cdk.json's defaults:
    # 48 instance-hours over at most 2 instances)
    (create,) = granted(statements, "sagemaker:CreateTrainingJob")
    assert _as_list(create["Action"]) == ["sagemaker:CreateTrainingJob"]
    assert create["Condition"] == {
        "ForAllValues:StringEquals": {"sagemaker:InstanceTypes": list(DEFAULT_ALLOWED_INSTANCE_TYPES)},
        "Null": {"sagemaker:InstanceTypes": "false"},
        "NumericLessThanEquals": {"sagemaker:MaxRuntimeInSeconds": str(24 * 3600)},
    }
    (tagging,) = granted(statements, "sagemaker:AddTags")
    assert tagging["Resource"] == training_job_arn()
    assert tagging["Condition"] == {"StringEquals": {"sagemaker:TaggingAction": "CreateTrainingJob"}}
    (pass_role,) = granted(statements, "iam:PassRole")
    role_id = synthesized.logical_id(synthesized.stack.sagemaker.role)
    assert pass_role["Resource"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
    # It stops only the job it has just launched, when its execution ended meanwhile (lambdas/remediation/job/launch_guard.py)
    (stop,) = granted(statements, "sagemaker:StopTrainingJob")
    assert stop["Resource"] == training_job_arn()
    # S3: only the checkpoints a resuming remedy carries over (CopyObject: read the source, write the target; a
    # copy that cannot finish is deleted so the job starts from step 0)
    (copying,) = [s for s in statements if any(a.startswith("s3:") and a != "s3:ListBucket" for a in _as_list(s["Action"]))]
    # (a file over 256 MiB is copied in parts: a copy that fails is aborted, not left half-way)
    assert set(_as_list(copying["Action"])) == {"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}
    assert copying["Resource"] == bucket_object_arn(synthesized, bucket_layout.CHECKPOINTS_PREFIX)
    # Once its job exists it asks whether its execution still runs: this state machine's executions only
    (describe,) = granted(statements, "states:DescribeExecution")
    assert describe["Resource"] == executions_arn(synthesized)
    (listing,) = granted(statements, "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["checkpoints/*"]}}


def test_monitor_lambda_watches_and_stops_prefixed_jobs_and_reads_only_debug_output(synthesized):
    statements = role_statements(synthesized, synthesized.stack.functions.monitor.role)
    for action in ("sagemaker:DescribeTrainingJob", "sagemaker:StopTrainingJob"):
        (statement,) = granted(statements, action)
        assert statement["Resource"] == training_job_arn()
    assert not granted(statements, "sagemaker:CreateTrainingJob") and not granted(statements, "iam:PassRole")
    (read,) = granted(statements, "s3:GetObject")
    assert read["Resource"] == bucket_object_arn(synthesized, bucket_layout.DEBUG_OUTPUT_PREFIX)
    (listing,) = granted(statements, "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["debug-output/*"]}}
    assert not granted(statements, "s3:PutObject")


def test_every_lambda_publishes_only_to_the_topic_and_encrypts_only_with_its_key(synthesized):
    topic_id = synthesized.logical_id(synthesized.stack.notifications.topic)
    key_id = synthesized.logical_id(synthesized.stack.notifications.key)
    functions = synthesized.stack.functions
    assert not granted(role_statements(synthesized, functions.job_events.role), "sns:Publish")
    for function in functions.publishing:
        statements = role_statements(synthesized, function.role)
        (publish,) = granted(statements, "sns:Publish")
        assert publish["Resource"] == {"Ref": topic_id}
        (encrypt,) = granted(statements, "kms:GenerateDataKey")
        assert encrypt["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}
    plan_statements = role_statements(synthesized, synthesized.stack.functions.plan.role)
    plan_actions = {a for s in plan_statements for a in _as_list(s["Action"])}
    # and Initialize counts this state machine's running executions (max_concurrent_executions)
    assert plan_actions == EVERY_LAMBDA | PUBLISH | {"states:ListExecutions"}
    (listing,) = granted(plan_statements, "states:ListExecutions")
    assert listing["Resource"] == {"Ref": synthesized.logical_id(synthesized.stack.workflow.state_machine)}


def test_sagemaker_role_reads_code_data_checkpoints_and_writes_output_debug_output_checkpoints_only(synthesized):
    statements = role_statements(synthesized, synthesized.stack.sagemaker.role)
    (read,) = granted(statements, "s3:GetObject")
    assert sorted(map(json.dumps, _as_list(read["Resource"]))) == sorted(
        json.dumps(bucket_object_arn(synthesized, p)) for p in ("code/", "data/", "checkpoints/")
    )
    (write,) = granted(statements, "s3:PutObject")
    assert sorted(map(json.dumps, _as_list(write["Resource"]))) == sorted(
        json.dumps(bucket_object_arn(synthesized, p)) for p in ("jobs/", "debug-output/", "checkpoints/")
    )
    (listing,) = granted(statements, "s3:ListBucket")
    # checkpoints/ only below a job's secret token (32 characters), debug-output/ not at all
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["code/*", "data/*", "checkpoints/*/" + "?" * 32 + "*"]}}
    s3_actions = {a for s in statements for a in _as_list(s["Action"]) if a.startswith("s3:")}
    assert s3_actions == {"s3:GetObject", "s3:PutObject", "s3:ListBucket"}
    (pull,) = granted(statements, "ecr:BatchGetImage")
    repositories = {}
    for resource in pull["Resource"]:
        parts = resource["Fn::Join"][1]
        (lookup,) = [p["Fn::FindInMap"] for p in parts if isinstance(p, dict) and "Fn::FindInMap" in p]
        assert lookup[1] == {"Ref": "AWS::Region"}
        repositories[parts[-1]] = lookup[2]
    assert repositories == {":repository/pytorch": "Training", ":repository/sagemaker-xgboost": "XGBoost"}
    (streams,) = [s for s in granted(statements, "logs:PutLogEvents") if "TrainingJobs" in json.dumps(s["Resource"])]
    assert json.dumps(streams["Resource"]).endswith(
        ':log-group:/aws/sagemaker/TrainingJobs:log-stream:remediation*"]]}'
    )


def test_without_legacy_mode_the_sagemaker_role_cannot_stop_jobs_list_them_or_read_debug_output(synthesized):
    """A training script runs as this role: without legacy mode it gets none of the evaluator's grants (it could
    have stopped every remediation job of the stack, and read every run's tensors)."""
    statements = role_statements(synthesized, synthesized.stack.sagemaker.role)
    assert not {a for s in statements for a in _as_list(s["Action"]) if a.startswith("sagemaker:")}
    (read,) = granted(statements, "s3:GetObject")
    assert "debug-output" not in json.dumps(read["Resource"])
    assert "ProcessingJobs" not in json.dumps(statements)
    assert "sagemaker-debugger-rules" not in json.dumps(statements)


@pytest.fixture(scope="module")
def legacy_synthesized(variant_synthesized):
    return variant_synthesized  # legacy mode (and a budget)


def test_sagemaker_role_lets_the_legacy_rule_evaluator_read_its_tensors_stop_the_job_and_log(legacy_synthesized):
    """Legacy mode (-c legacy_sagemaker_debugger=true): SageMaker runs each built-in rule as a processing job under
    the training job's role. The evaluator reads the tensors SageMaker's hook writes under debug-output/ (smdebug
    lists and reads the prefix), its StopTraining action lists InProgress jobs by name (ListTrainingJobs, no
    resource ARN) and stops the one it finds (smdebug rules/action/stop_training_action.py), and it logs to
    /aws/sagemaker/ProcessingJobs under a job name that starts with the lower-cased training job name."""
    synthesized = legacy_synthesized
    statements = role_statements(synthesized, synthesized.stack.sagemaker.role)
    (pull,) = granted(statements, "ecr:BatchGetImage")
    assert any(
        resource["Fn::Join"][1][-1] == ":repository/sagemaker-debugger-rules" for resource in pull["Resource"]
    )  # the rule evaluator's image
    (read,) = granted(statements, "s3:GetObject")
    # the tensors SageMaker's hook wrote (<job>/debug-output/), not the rest of debug-output/
    tensors = {"Fn::Join": ["", [{"Fn::GetAtt": [synthesized.logical_id(synthesized.stack.storage.artifacts_bucket), "Arn"]}, "/debug-output/*/debug-output/*"]]}
    assert json.dumps(tensors) in map(json.dumps, _as_list(read["Resource"]))
    assert json.dumps(bucket_object_arn(synthesized, bucket_layout.DEBUG_OUTPUT_PREFIX)) not in map(
        json.dumps, _as_list(read["Resource"])
    )
    (listing,) = granted(statements, "s3:ListBucket")
    assert "debug-output/*/debug-output*" in listing["Condition"]["StringLike"]["s3:prefix"]
    (list_jobs,) = granted(statements, "sagemaker:ListTrainingJobs")
    assert list_jobs["Resource"] == "*"
    (stop,) = granted(statements, "sagemaker:StopTrainingJob")
    assert stop["Resource"] == training_job_arn()
    assert {a for s in statements for a in _as_list(s["Action"]) if a.startswith("sagemaker:")} == {
        "sagemaker:ListTrainingJobs",
        "sagemaker:StopTrainingJob",
    }
    streams = [
        json.dumps(s["Resource"])
        for s in granted(statements, "logs:PutLogEvents")
        if "ProcessingJobs" in json.dumps(s["Resource"])
    ]
    assert len(streams) == 1 and streams[0].endswith(
        ':log-group:/aws/sagemaker/ProcessingJobs:log-stream:remediation*"]]}'
    )


def test_images_are_pulled_from_the_registries_the_train_lambda_names(synthesized):
    from lambdas.remediation.job.training_images import (
        DLC_ACCOUNT_BY_REGION,
        RULE_EVALUATOR_ACCOUNT_BY_REGION,
        rule_evaluator_image_uri,
        training_image_uri,
    )
    from lambdas.remediation.job.xgboost_images import XGBOOST_ACCOUNT_BY_REGION

    (mapping,) = synthesized.template["Mappings"].values()
    assert set(mapping) == set(DLC_ACCOUNT_BY_REGION)  # every region the images are published in, no other
    for region in DLC_ACCOUNT_BY_REGION:
        assert training_image_uri(region, "ml.m5.xlarge").split(".")[0] == mapping[region]["Training"]
    for region in set(RULE_EVALUATOR_ACCOUNT_BY_REGION) & set(DLC_ACCOUNT_BY_REGION):
        assert rule_evaluator_image_uri(region).split(".")[0] == mapping[region]["Rules"]
    for region in set(XGBOOST_ACCOUNT_BY_REGION) & set(DLC_ACCOUNT_BY_REGION):
        uri = training_image_uri(region, "ml.m5.xlarge", None, "xgboost")
        assert uri.split(".")[0] == mapping[region]["XGBoost"] and "/sagemaker-xgboost:" in uri


def test_state_machine_invokes_exactly_the_loops_four_lambdas(synthesized):
    statements = role_statements(synthesized, synthesized.stack.workflow.state_machine.role)
    (invoke,) = granted(statements, "lambda:InvokeFunction")
    functions = synthesized.stack.functions
    assert sorted(r["Fn::GetAtt"][0] for r in invoke["Resource"]) == sorted(
        synthesized.logical_id(f) for f in (functions.train, functions.monitor, functions.plan, functions.job_events)
    )
    assert synthesized.logical_id(functions.execution_cleanup) not in json.dumps(invoke)


def test_job_events_lambda_keeps_and_reads_task_tokens_reads_jobs_and_ends_waits_of_this_state_machine_only(
    synthesized,
):
    statements = role_statements(synthesized, synthesized.stack.functions.job_events.role)
    for action in ("s3:PutObject", "s3:GetObject"):
        (statement,) = granted(statements, action)
        assert statement["Resource"] == bucket_object_arn(synthesized, bucket_layout.TASK_TOKENS_PREFIX)
    (listing,) = granted(statements, "s3:ListBucket")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["task-tokens/*"]}}
    (describe,) = granted(statements, "sagemaker:DescribeTrainingJob")
    assert describe["Resource"] == training_job_arn()
    (end_waits,) = granted(statements, "states:SendTaskSuccess")
    assert end_waits["Resource"] == {"Ref": synthesized.logical_id(synthesized.stack.workflow.state_machine)}
    (dead_letters,) = granted(statements, "sqs:SendMessage")  # its asynchronous invocations' on-failure destination
    assert dead_letters["Resource"] == dead_letter_queue_arn(synthesized)
    actions = {a for s in statements for a in _as_list(s["Action"])}
    assert actions == EVERY_LAMBDA | ASYNC_FAILURES | {
        "s3:PutObject",
        "s3:GetObject",
        "s3:ListBucket",
        "sagemaker:DescribeTrainingJob",
        "states:SendTaskSuccess",
    }


def executions_arn(synthesized) -> dict:
    machine = synthesized.logical_id(synthesized.stack.workflow.state_machine)
    return {
        "Fn::Join": [
            "",
            [
                "arn:",
                {"Ref": "AWS::Partition"},
                ":states:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                ":execution:",
                {"Fn::GetAtt": [machine, "Name"]},
                ":*",
            ],
        ]
    }


def dead_letter_queue_arn(synthesized) -> dict:
    return {"Fn::GetAtt": [synthesized.logical_id(synthesized.stack.dead_letters.queue), "Arn"]}


def test_execution_cleanup_lambda_reads_this_state_machines_histories_and_stops_only_prefixed_jobs(synthesized):
    statements = role_statements(synthesized, synthesized.stack.functions.execution_cleanup.role)
    (history,) = granted(statements, "states:GetExecutionHistory")
    assert history["Resource"] == executions_arn(synthesized)
    (dead_letters,) = granted(statements, "sqs:SendMessage")  # its asynchronous invocations' on-failure destination
    assert dead_letters["Resource"] == dead_letter_queue_arn(synthesized)
    for action in ("sagemaker:DescribeTrainingJob", "sagemaker:ListTags", "sagemaker:StopTrainingJob"):
        (statement,) = granted(statements, action)
        assert statement["Resource"] == training_job_arn()
    actions = {a for s in statements for a in _as_list(s["Action"])}
    assert actions == EVERY_LAMBDA | PUBLISH | ASYNC_FAILURES | {
        "states:GetExecutionHistory",
        "sagemaker:DescribeTrainingJob",
        "sagemaker:ListTags",
        "sagemaker:StopTrainingJob",
    }


# --------------------------------------------------------------------------- the handlers' AWS calls vs. the grants


def _aws_operations() -> dict[str, set[str]]:
    """snake_case boto3 method -> {"prefix:Operation"} over the services the handlers may use."""
    session = botocore.session.get_session()
    operations: dict[str, set[str]] = {}
    for service, prefix in IAM_PREFIX.items():
        for operation in session.get_service_model(service).operation_names:
            operations.setdefault(xform_name(operation), set()).add(f"{prefix}:{operation}")
    operations = {name: actions for name, actions in operations.items() if name not in GENERIC_METHOD_NAMES}
    operations["upload_file"] = {"s3:PutObject"}  # boto3's managed transfers
    operations["download_file"] = {"s3:GetObject"}
    # S3 API operations whose IAM action has another name.
    operations["list_objects_v2"] = {"s3:ListBucket"}
    operations["list_objects"] = {"s3:ListBucket"}
    # CopyObject is authorised as GetObject on the source and PutObject on the target (the tests of each Lambda
    # that copies check both grants on their prefix).
    operations["copy_object"] = {"s3:PutObject"}
    operations["delete_objects"] = {"s3:DeleteObject"}  # DeleteObjects is authorised per object
    return operations


def _module_file(module: str) -> Path | None:
    path = REPO_ROOT.joinpath(*module.split(".")).with_suffix(".py")
    return path if path.is_file() else None


def aws_actions_reached(handler_module: str) -> set[str]:
    """IAM actions for the AWS calls a handler makes, following calls into lambdas.* module functions."""
    operations = _aws_operations()
    trees: dict[str, ast.Module] = {}

    def tree(module: str) -> ast.Module:
        if module not in trees:
            trees[module] = ast.parse(_module_file(module).read_text(encoding="utf-8"))
        return trees[module]

    def module_aliases(module: str) -> dict[str, str]:
        aliases = {}
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lambdas"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if _module_file(full):
                        aliases[alias.asname or alias.name] = full
        return aliases

    reached: set[str] = set()
    seen: set[tuple[str, str]] = set()

    def visit(module: str, body: list[ast.stmt]) -> None:
        aliases = module_aliases(module)
        functions = {n.name: n for n in tree(module).body if isinstance(n, ast.FunctionDef)}
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if not isinstance(node, ast.Call):
                continue
            target = node.func
            if isinstance(target, ast.Attribute):
                owner = target.value.id if isinstance(target.value, ast.Name) else None
                if owner in aliases:
                    follow(aliases[owner], target.attr)
                elif target.attr in operations:
                    reached.update(operations[target.attr])
            elif isinstance(target, ast.Name) and target.id in functions:
                follow(module, target.id)

    def follow(module: str, function: str) -> None:
        if (module, function) in seen:
            return
        seen.add((module, function))
        definitions = [n for n in tree(module).body if isinstance(n, ast.FunctionDef) and n.name == function]
        if definitions:
            visit(module, definitions[0].body)

    visit(handler_module, tree(handler_module).body)
    return reached


@pytest.mark.parametrize("name", ["train", "monitor", "plan", "job_events", "execution_cleanup", "stack_teardown"])
def test_each_lambda_is_granted_every_aws_call_its_handler_makes(synthesized, name):
    module = f"lambdas.{name}_handler"
    assert _module_file(module), f"{module} is missing: the stack deploys it as the {name} Lambda's handler"
    candidates = aws_actions_reached(module)
    assert candidates, f"{module}: found no AWS call at all, the call-graph scan is broken"
    function = getattr(synthesized.stack.functions, name)
    allowed = {a for s in role_statements(synthesized, function.role) for a in _as_list(s["Action"])}
    # A boto3 method name shared by several services maps to several actions: one of them suffices.
    by_method: dict[str, set[str]] = {}
    for action in candidates:
        by_method.setdefault(xform_name(action.split(":")[1]), set()).add(action)
    missing = {method: actions for method, actions in by_method.items() if not actions & allowed}
    assert not missing, f"{name} Lambda calls AWS without a grant: {missing}"


def test_the_sagemaker_role_grants_what_the_in_job_debugger_mirror_calls(synthesized):
    """The training job mirrors its debug output to S3 with boto3 (debugger/storage/s3_mirror.py) as the SageMaker role."""
    reached = aws_actions_reached("debugger.storage.s3_mirror")
    assert reached == {"s3:PutObject"}, reached
    statements = role_statements(synthesized, synthesized.stack.sagemaker.role)
    (write,) = granted(statements, "s3:PutObject")
    assert json.dumps(bucket_object_arn(synthesized, bucket_layout.DEBUG_OUTPUT_PREFIX)) in map(
        json.dumps, _as_list(write["Resource"])
    )


# --------------------------------------------------------------------------- helpers


def _construct_path_of_role(synthesized, role_logical_id: str) -> str:
    for construct in synthesized.stack.node.find_all():
        child = construct.node.default_child
        if child is not None and hasattr(child, "cfn_resource_type") and child.cfn_resource_type == "AWS::IAM::Role":
            if synthesized.stack.resolve(child.logical_id) == role_logical_id:
                return construct.node.path
    raise AssertionError(f"no role construct for {role_logical_id}")


def test_stack_teardown_lambda_stops_only_this_state_machines_executions_and_prefixed_jobs(synthesized):
    statements = role_statements(synthesized, synthesized.stack.functions.stack_teardown.role)
    machine = {"Ref": synthesized.logical_id(synthesized.stack.workflow.state_machine)}
    (listing,) = granted(statements, "states:ListExecutions")
    assert listing["Resource"] == machine
    (stop,) = granted(statements, "states:StopExecution")
    assert stop["Resource"] == executions_arn(synthesized)
    for action in ("sagemaker:ListTags", "sagemaker:StopTrainingJob"):
        (statement,) = granted(statements, action)
        assert statement["Resource"] == training_job_arn()
    (find,) = granted(statements, "sagemaker:ListTrainingJobs")
    assert find["Resource"] == "*"  # ListTrainingJobs takes no resource ARN
    actions = {a for s in statements for a in _as_list(s["Action"])}
    assert actions == EVERY_LAMBDA | {
        "states:ListExecutions",
        "states:StopExecution",
        "sagemaker:ListTrainingJobs",
        "sagemaker:ListTags",
        "sagemaker:StopTrainingJob",
    }


def _string_like(pattern: str, value: str) -> bool:
    """IAM's StringLike: ``*`` any run of characters (slashes too), ``?`` one character, the rest literal."""
    import re

    return re.fullmatch("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), value) is not None


@pytest.mark.parametrize("legacy", [False, True])
def test_no_listing_the_training_role_may_make_shows_another_runs_evidence(synthesized, variant_synthesized, legacy):
    """One SageMaker role serves every run, and listing checkpoints/ showed every job's name, so a script could write
    debug-output/<another job>/rule-status.json naming that job. Now each job's evidence is under
    <job>/<token>/ (an HMAC of its name under its execution's secret): every prefix the role may list is either not a
    prefix of another job's keys or already holds its token, so none reveals a token; its own checkpoint prefix stays
    listable (SageMaker lists it at a (re)start), with or without its trailing slash."""
    from lambdas.remediation.job import job_identity

    stack = variant_synthesized if legacy else synthesized
    (listing,) = granted(role_statements(stack, stack.stack.sagemaker.role), "s3:ListBucket")
    patterns = _as_list(listing["Condition"]["StringLike"]["s3:prefix"])

    def listable(prefix: str) -> bool:
        return any(_string_like(pattern, prefix) for pattern in patterns)

    other = "remediation-resnet-0123456789-002"
    prefixes = job_identity.evidence_prefixes(other, job_identity.new_evidence_key())
    token = prefixes.checkpoints.split("/")[2]
    for secret_key in (prefixes.checkpoints, prefixes.debug_output):
        above_the_token = [secret_key[:cut] for cut in range(len(secret_key)) if token not in secret_key[:cut]]
        assert not [p for p in above_the_token if listable(p)], [p for p in above_the_token if listable(p)][:3]
    assert listable(prefixes.checkpoints) and listable(prefixes.checkpoints.rstrip("/"))
    assert listable("code/") and listable("data/train-0123/")
    assert listable(f"debug-output/{other}/debug-output/") is legacy  # the legacy evaluator's tensors only
