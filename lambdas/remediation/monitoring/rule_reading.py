"""Reading a job's rule statuses: our ``rule-status.json`` in the artifacts bucket, plus (legacy mode) SageMaker's
``DebugRuleEvaluationStatuses``.

Trust boundary: every training job of a stack runs under the stack's one SageMaker role, which may write anywhere
under ``debug-output/`` but list none of it (docs/cloud.md, "Trust boundary"). So a job's document is read only from
the prefix its execution's secret names (``job_identity.evidence_prefixes``: ``debug-output/<job>/<token>/``, which
no other run's job can list or compute), never from the conventional ``debug-output/<job>/`` anyone may write, and
only if it names that job; one that names another job is refused and said so. A script that forges a document
naming its own job is inside the boundary: run untrusted scripts in a stack of their own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

import contracts
from contracts import rule_status
from lambdas.remediation.job.job_identity import evidence_prefixes
from lambdas.remediation.state.payload import WorkflowState


@dataclasses.dataclass(frozen=True)
class RuleReading:
    """The rule statuses for a job, and our status document when there is one (and it is the job's own)."""

    statuses: tuple[rule_status.RuleStatus, ...]
    document: rule_status.RuleStatusDocument | None = None
    #: The job a refused document named (it was under this job's key but not this job's).
    foreign_job: str | None = None


def read_rule_statuses(
    s3_client: Any, state: WorkflowState, job_name: str, describe_response: Mapping[str, Any]
) -> RuleReading:
    """Our rule-status.json (absent while the job starts: no statuses yet), plus SageMaker's in legacy mode."""
    key = evidence_prefixes(job_name, state.evidence_key).debug_output + rule_status.RULE_STATUS_FILE
    document = read_rule_status_document(s3_client, state.run_spec.bucket, key)
    foreign = None
    if document is not None and document.job_name != job_name:
        foreign, document = document.job_name, None
    statuses = list(document.rules) if document else []
    if state.run_spec.legacy_sagemaker_debugger:
        statuses += rule_status.rule_statuses_from_sagemaker(describe_response.get("DebugRuleEvaluationStatuses", []))
    return RuleReading(statuses=tuple(statuses), document=document, foreign_job=foreign)


def read_rule_status_document(s3_client: Any, bucket: str, key: str) -> rule_status.RuleStatusDocument | None:
    """The document at ``key``; None while the job has not written its status yet.

    The key is listed before it is read: the monitor's s3:ListBucket grant is
    conditioned on the debug-output/ prefix, and a GetObject of a missing key
    answers 403 (not 404) to a caller whose ListBucket does not cover the request.
    """
    listing = s3_client.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
    if not any(item["Key"] == key for item in listing.get("Contents", [])):
        return None
    try:
        response = s3_client.get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise
    body = response["Body"].read()
    try:
        return rule_status.RuleStatusDocument.from_json(body)
    except contracts.ContractError as error:
        raise contracts.ContractError(f"s3://{bucket}/{key}", str(error)) from None


def metrics_saved_by_script(document: rule_status.RuleStatusDocument | None) -> dict[str, float]:
    if document is None:
        return {}
    return {name: metric.value for name, metric in document.metrics.items() if metric.value is not None}
