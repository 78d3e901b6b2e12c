"""A delete that stops what the stack started: a custom resource that every part of the loop depends on, so
CloudFormation deletes it first. Its Lambda (lambdas/stack_teardown_handler.py) stops the state machine's running
executions (Error StackDeleted: notified, not alarmed) and their training jobs and waits until none runs, before
the state machine, the Lambdas, the EventBridge rules and the SageMaker role go. The dead-letter queue and the log
groups are retained (infra/dead_letters.py, infra/functions.py, infra/workflow.py): the evidence stays.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, CustomResource, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct, IConstruct

from infra.nag import account_scoped_arn_prefix, acknowledge, attribute_placeholder
from lambdas.stack_teardown_handler import STATE_MACHINE_ARN_ENV


class StackTeardown(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        function: lambda_.Function,
        state_machine: sfn.StateMachine,
        outlived: list[IConstruct],
    ) -> None:
        super().__init__(scope, construct_id)
        function.add_environment(STATE_MACHINE_ARN_ENV, state_machine.state_machine_arn)
        executions = Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{state_machine.state_machine_name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListThisStateMachinesExecutions",
                actions=["states:ListExecutions"],
                resources=[state_machine.state_machine_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="StopThisStateMachinesExecutions", actions=["states:StopExecution"], resources=[executions]
            )
        )
        acknowledge(
            function.role,
            f"AwsSolutions-IAM5[Resource::{account_scoped_arn_prefix(self, 'states')}execution:"
            f"{attribute_placeholder(state_machine.node.default_child, 'Name')}:*]",
            "Executions are named at start; this state machine's execution ARNs are their scope.",
        )
        self.resource = CustomResource(
            self, "StopsWhatTheStackStarted", service_token=function.function_arn, resource_type="Custom::StackTeardown"
        )
        # Deleted before everything a running execution or job needs: CloudFormation deletes in reverse dependency
        # order, so these go only once the teardown has answered.
        for construct in (state_machine, *outlived):
            self.resource.node.add_dependency(construct)
