"""The remediation state machine (the ASL file inlined, Lambda ARNs substituted); its alarms are in infra/alarms.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

from aws_cdk import Fn, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.bundling import REPO_ROOT
from infra.nag import acknowledge
from infra.notifications import NotificationTopic

DEFAULT_DEFINITION_PATH = REPO_ROOT / "statemachine" / "remediation.asl.json"
SUBSTITUTION_PATTERN = re.compile(r"\$\{([A-Za-z0-9_]+)\}")

TRAIN_FUNCTION_ARN = "TrainFunctionArn"
MONITOR_FUNCTION_ARN = "MonitorFunctionArn"
PLAN_FUNCTION_ARN = "PlanFunctionArn"
JOB_EVENTS_FUNCTION_ARN = "JobEventsFunctionArn"
NOTIFICATION_TOPIC_ARN = "NotificationTopicArn"
REQUIRED_SUBSTITUTIONS = (TRAIN_FUNCTION_ARN, MONITOR_FUNCTION_ARN, PLAN_FUNCTION_ARN, JOB_EVENTS_FUNCTION_ARN)
OPTIONAL_SUBSTITUTIONS = (NOTIFICATION_TOPIC_ARN,)

#: Task resources the state machine role is granted for; anything else fails the synth.
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
#: The callback pattern: the Lambda gets $$.Task.Token and the task waits for SendTaskSuccess (same grant).
LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN = "arn:aws:states:::lambda:invoke.waitForTaskToken"
SNS_PUBLISH = "arn:aws:states:::sns:publish"
GRANTED_TASK_RESOURCES = (LAMBDA_INVOKE, LAMBDA_INVOKE_WAIT_FOR_TASK_TOKEN, SNS_PUBLISH)


class DefinitionError(ValueError):
    """The ASL file cannot be deployed as it is; the message names the file and the fix."""


def load_definition(path: Path) -> tuple[str, set[str]]:
    """The ASL text and the substitution names it uses, checked against what the stack provides."""
    if not path.is_file():
        raise DefinitionError(f"state machine definition not found: {path}; pass -c state_machine_definition=PATH")
    text = path.read_text(encoding="utf-8")
    try:
        definition = json.loads(text)
    except json.JSONDecodeError as error:
        raise DefinitionError(f"{path}: not valid JSON ({error})") from error
    if not isinstance(definition, dict) or "States" not in definition or "StartAt" not in definition:
        raise DefinitionError(f"{path}: not an Amazon States Language document (needs StartAt and States)")
    used = set(SUBSTITUTION_PATTERN.findall(text))
    unknown = used - set(REQUIRED_SUBSTITUTIONS) - set(OPTIONAL_SUBSTITUTIONS)
    if unknown:
        raise DefinitionError(
            f"{path}: unknown substitution(s) {', '.join('${' + name + '}' for name in sorted(unknown))}; "
            f"the stack provides {', '.join('${' + n + '}' for n in REQUIRED_SUBSTITUTIONS + OPTIONAL_SUBSTITUTIONS)}"
        )
    missing = set(REQUIRED_SUBSTITUTIONS) - used
    if missing:
        raise DefinitionError(
            f"{path}: never references {', '.join('${' + name + '}' for name in sorted(missing))}; "
            "every Lambda must be reached through its substitution"
        )
    for resource in sorted(_task_resources(definition.get("States", {}))):
        if not (SUBSTITUTION_PATTERN.fullmatch(resource) or resource in GRANTED_TASK_RESOURCES):
            raise DefinitionError(
                f"{path}: Task resource {resource!r} is not granted to the state machine; use a Lambda substitution, "
                f"{', '.join(GRANTED_TASK_RESOURCES)}, or extend infra/workflow.py with its least-privilege grant"
            )
    return text, used


def _task_resources(states: dict) -> set[str]:
    resources: set[str] = set()
    for state in states.values():
        if not isinstance(state, dict):
            continue
        if state.get("Type") == "Task" and isinstance(state.get("Resource"), str):
            resources.add(state["Resource"])
        for branch in state.get("Branches", []) or []:
            resources |= _task_resources(branch.get("States", {}))
        for key in ("Iterator", "ItemProcessor"):
            if isinstance(state.get(key), dict):
                resources |= _task_resources(state[key].get("States", {}))
    return resources


class RemediationWorkflow(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        train: lambda_.IFunction,
        monitor: lambda_.IFunction,
        plan: lambda_.IFunction,
        job_events: lambda_.IFunction,
        notifications: NotificationTopic,
        definition_path: Path = DEFAULT_DEFINITION_PATH,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        topic = notifications.topic
        definition, used = load_definition(definition_path)
        substitutions = {
            TRAIN_FUNCTION_ARN: train.function_arn,
            MONITOR_FUNCTION_ARN: monitor.function_arn,
            PLAN_FUNCTION_ARN: plan.function_arn,
            JOB_EVENTS_FUNCTION_ARN: job_events.function_arn,
        }
        if NOTIFICATION_TOPIC_ARN in used:
            substitutions[NOTIFICATION_TOPIC_ARN] = topic.topic_arn

        # Kept when the stack is deleted (the evidence of what ran); the stack's own id in the name, so a stack
        # created again under the same name does not collide with the group its predecessor left.
        stack_uuid = Fn.select(2, Fn.split("/", stack.stack_id))
        self.log_group = logs.LogGroup(
            self,
            "ExecutionLogs",
            log_group_name=f"/aws/vendedlogs/states/{stack.stack_name}-remediation-{stack_uuid}",
            retention=logs.RetentionDays.THREE_MONTHS,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(definition),
            definition_substitutions=substitutions,
            # Every event, without execution data: the data would put each payload (up to 256 KiB) and each wait's
            # task token in the log; the history keeps them for whoever may read it.
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            tracing_enabled=True,
        )
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                sid="InvokeRemediationLambdas",
                actions=["lambda:InvokeFunction"],
                resources=[train.function_arn, monitor.function_arn, plan.function_arn, job_events.function_arn],
            )
        )
        if NOTIFICATION_TOPIC_ARN in used:
            notifications.grant_encrypted_publish(self.state_machine)
        acknowledge(
            self.state_machine.role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray tracing and CloudWatch Logs vended-log delivery actions support no resource-level scoping.",
        )
