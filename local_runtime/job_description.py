"""DescribeTrainingJob's answer for a local job, in SageMaker's shape (botocore's output model; a test checks it), and
in legacy mode SageMaker Debugger's rule-job statuses answered from the in-job debugger's rule-status.json."""

from __future__ import annotations

import json
from typing import Any

from contracts.rule_status import RULE_STATUS_FILE
from local_runtime.offline_aws import ACCOUNT_ID
from local_runtime.training_job import BucketMirror, TrainingJobRecord

#: Request fields a description repeats as they were given.
_ECHOED = (
    "CheckpointConfig",
    "DebugHookConfig",
    "DebugRuleConfigurations",
    "Environment",
    "RetryStrategy",
    "TensorBoardOutputConfig",
)


def describe(job: TrainingJobRecord, region: str, mirror: BucketMirror) -> dict[str, Any]:
    """The job's description. Caller holds ``job.lock``."""
    request = job.request
    response: dict[str, Any] = {
        "TrainingJobName": job.name,
        "TrainingJobArn": job.arn,
        "ModelArtifacts": {"S3ModelArtifacts": job.model_artifact_uri},
        "TrainingJobStatus": job.status,
        "SecondaryStatus": job.secondary_status,
        "HyperParameters": dict(request.get("HyperParameters", {})),
        "AlgorithmSpecification": dict(request.get("AlgorithmSpecification", {"TrainingInputMode": "File"})),
        "RoleArn": request["RoleArn"],
        **({"InputDataConfig": list(request["InputDataConfig"])} if request.get("InputDataConfig") else {}),
        "OutputDataConfig": dict(request["OutputDataConfig"]),
        "ResourceConfig": dict(request.get("ResourceConfig", {})),
        "StoppingCondition": dict(request.get("StoppingCondition", {"MaxRuntimeInSeconds": 86400})),
        "CreationTime": job.created,
        "LastModifiedTime": job.last_modified or job.created,
        "SecondaryStatusTransitions": [dict(item) for item in job.transitions],
        "FinalMetricDataList": [
            {"MetricName": name, "Value": value, "Timestamp": at}
            for name, (value, at) in sorted(job.log.metric_values.items())
        ],
        "EnableNetworkIsolation": bool(request.get("EnableNetworkIsolation", False)),
        "EnableInterContainerTrafficEncryption": bool(request.get("EnableInterContainerTrafficEncryption", False)),
        "EnableManagedSpotTraining": bool(request.get("EnableManagedSpotTraining", False)),
    }
    if job.failure_reason:
        response["FailureReason"] = job.failure_reason
    if job.training_start:
        response["TrainingStartTime"] = job.training_start
    if job.training_end:
        response["TrainingEndTime"] = job.training_end
        seconds = max(1, int(round((job.training_end - (job.training_start or job.created)).total_seconds())))
        response["TrainingTimeInSeconds"] = seconds
        response["BillableTimeInSeconds"] = seconds
    for key in _ECHOED:
        if key in request:
            response[key] = request[key]
    if "DebugRuleConfigurations" in request:
        response["DebugRuleEvaluationStatuses"] = rule_evaluation_statuses(job, region, mirror)
    return response


def rule_evaluation_statuses(job: TrainingJobRecord, region: str, mirror: BucketMirror) -> list[dict[str, Any]]:
    """Legacy mode: SageMaker's rule-job statuses, answered from the in-job debugger's rule-status.json."""
    document: dict[str, Any] = {}
    if job.debug_output_uri:
        path = mirror.local_path(job.debug_output_uri) / RULE_STATUS_FILE
        try:
            document = json.loads(path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            document = {}
    by_name = {rule.get("RuleConfigurationName"): rule for rule in document.get("rules", []) if isinstance(rule, dict)}
    statuses = []
    for rule in job.request["DebugRuleConfigurations"]:
        name = rule["RuleConfigurationName"]
        found = by_name.get(name, {})
        status = found.get("RuleEvaluationStatus") or ("NoIssuesFound" if job.ended else "InProgress")
        statuses.append(
            {
                "RuleConfigurationName": name,
                "RuleEvaluationJobArn": f"arn:aws:sagemaker:{region}:{ACCOUNT_ID}:processing-job/{job.name[:26].lower()}-{name[:26].lower()}",
                "RuleEvaluationStatus": status,
                "StatusDetails": found.get("StatusDetails", ""),
                "LastModifiedTime": job.last_modified or job.created,
            }
        )
    return statuses
