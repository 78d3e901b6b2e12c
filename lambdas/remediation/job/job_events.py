"""The event-driven wait: which events wake the workflow, and the task token that connects them.

The state machine's WaitForJob task (``lambda:invoke.waitForTaskToken``) gives
the job-events Lambda its task token; the Lambda keeps it in the artifacts bucket
under the job's name (:func:`keep_task_token`). When the job reaches a final
status, SageMaker sends "SageMaker Training Job State Change" to EventBridge; the
rule (:func:`training_job_state_change_pattern`) delivers it to the same Lambda,
which reads the token back and completes the wait (:func:`wake`). The wait's
timeout (monitor_interval_seconds) is only the fallback.

When an execution ends outside its own Catch (timed out, aborted, failed), "Step
Functions Execution Status Change" (:func:`execution_status_change_pattern`)
reaches the execution-cleanup Lambda, which stops the job the execution left.

The patterns are used by the CDK stack (the rules), the local runtime (what plays
EventBridge there) and the tests: one definition.
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from contracts import bucket_layout

TRAINING_JOB_STATE_CHANGE = "SageMaker Training Job State Change"
EXECUTION_STATUS_CHANGE = "Step Functions Execution Status Change"
#: A job's TrainingJobStatus after which nothing changes: the wait ends on these (InProgress and Stopping do not).
FINAL_TRAINING_JOB_STATUSES = ("Completed", "Failed", "Stopped")
#: Execution statuses whose job may be left running: no Catch ran (timed out, aborted) or it failed anyway.
ABNORMAL_EXECUTION_STATUSES = ("FAILED", "TIMED_OUT", "ABORTED")
#: What SendTaskSuccess answers for a token whose wait already ended (timed out, answered, execution over).
ENDED_WAIT_ERRORS = ("TaskTimedOut", "TaskDoesNotExist", "InvalidToken")


def training_job_state_change_pattern(job_name_prefix: str) -> dict[str, Any]:
    """Our jobs (the stack's prefix, as the train Lambda names them) reaching a final status."""
    return {
        "source": ["aws.sagemaker"],
        "detail-type": [TRAINING_JOB_STATE_CHANGE],
        "detail": {
            "TrainingJobName": [{"prefix": f"{job_name_prefix}-"}],
            "TrainingJobStatus": list(FINAL_TRAINING_JOB_STATUSES),
        },
    }


def execution_status_change_pattern(state_machine_arn: str) -> dict[str, Any]:
    """This state machine's executions ending in a way that may leave a job running."""
    return {
        "source": ["aws.states"],
        "detail-type": [EXECUTION_STATUS_CHANGE],
        "detail": {"stateMachineArn": [state_machine_arn], "status": list(ABNORMAL_EXECUTION_STATUSES)},
    }


def keep_task_token(
    s3: Any, bucket: str, job_name: str, task_token: str, execution_id: str, execution_start_time: str
) -> None:
    """Keep the wait's token where the job's state change finds it (overwrites the previous wait's)."""
    body = {
        "task_token": task_token,
        "job_name": job_name,
        "execution_id": execution_id,
        "execution_start_time": execution_start_time,
    }
    s3.put_object(
        Bucket=bucket,
        Key=bucket_layout.task_token_key(job_name),
        Body=json.dumps(body).encode(),
        ContentType="application/json",
    )


def read_task_token(s3: Any, bucket: str, job_name: str) -> dict[str, Any] | None:
    """The kept token record for ``job_name``, or None when no execution waits for it."""
    try:
        response = s3.get_object(Bucket=bucket, Key=bucket_layout.task_token_key(job_name))
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise
    record = json.loads(response["Body"].read())
    return record if isinstance(record, dict) and record.get("task_token") else None


def wake(stepfunctions: Any, task_token: str, output: dict[str, Any]) -> bool:
    """SendTaskSuccess; False when that wait already ended (the fallback fired first, or the other path answered)."""
    try:
        stepfunctions.send_task_success(taskToken=task_token, output=json.dumps(output))
        return True
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ENDED_WAIT_ERRORS:
            return False
        raise
