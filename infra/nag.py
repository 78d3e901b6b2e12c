"""cdk-nag acknowledgements: one line of reason each, recorded where they apply."""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnElement, Stack, Token, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding (e.g. "AwsSolutions-IAM5[Resource::*]") on scope and its children."""
    if "\n" in reason or not reason.strip():
        raise ValueError(f"acknowledgement of {rule_id}: the reason must be one non-empty line")
    plugin_rule_id = rule_id if rule_id.startswith("AwsSolutions::") else f"AwsSolutions::{rule_id}"
    Validations.of(scope).acknowledge(Acknowledgment(id=plugin_rule_id, reason=reason))


def attribute_placeholder(cfn_resource: IConstruct, attribute: str = "Arn") -> str:
    """How cdk-nag writes a resource attribute in a finding id, e.g. "<StorageArtifacts08431D1F.Arn>"."""
    assert isinstance(cfn_resource, CfnElement), cfn_resource
    logical_id = Stack.of(cfn_resource).resolve(cfn_resource.logical_id)
    return f"<{logical_id}.{attribute}>"


def account_scoped_arn_prefix(scope: IConstruct, service: str) -> str:
    """How cdk-nag writes the start of an ARN of this stack's account and region in a finding id: placeholders
    for an environment-agnostic stack ("arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:"), the
    literal values when the stack has an account and region (-c account=... -c region=...)."""
    stack = Stack.of(scope)

    def part(value: str, pseudo: str) -> str:
        return f"<{pseudo}>" if Token.is_unresolved(value) else value

    return (
        f"arn:{part(stack.partition, 'AWS::Partition')}:{service}:{part(stack.region, 'AWS::Region')}:"
        f"{part(stack.account, 'AWS::AccountId')}:"
    )
