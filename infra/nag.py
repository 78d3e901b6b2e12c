"""cdk-nag acknowledgements: one line of reason each, recorded where they apply."""

from __future__ import annotations

from aws_cdk import Acknowledgment, CfnElement, Stack, Validations
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


ACCOUNT_SCOPED_ARN_PREFIX = "arn:<AWS::Partition>:{service}:<AWS::Region>:<AWS::AccountId>:"
