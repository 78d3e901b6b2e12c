"""What the stack's delete stops before its resources go: every running execution of its state machine, then every
training job of the stack that one of its executions launched, and it waits until none of them runs.

A custom resource (infra/teardown.py) that every part of the loop depends on runs this when the stack is deleted,
so CloudFormation deletes the state machine, the Lambdas, the rules and the SageMaker role only after it answered.
The executions are stopped with Error StackDeleted (a deliberate stop: notified, not alarmed). A train Lambda still
launching when its execution is stopped goes on (Step Functions does not stop it): so the teardown keeps looking
until that Lambda's timeout has passed after the stops (contracts.time_budgets.launch_settled_after), stopping any
job it finds, as the execution-cleanup Lambda's second look does.

Only jobs whose tags name an execution of this state machine are stopped (``job_identity.EXECUTION_TAG``): another
stack's jobs under the same name prefix are left alone.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from contracts import aws_tags, time_budgets
from lambdas.remediation import handler_support
from lambdas.remediation.job import job_identity
from lambdas.remediation.state import end_causes

#: The statuses of a job that still runs (or is still shutting down, and still needs its role).
RUNNING_JOB_STATUSES = ("InProgress", "Stopping")
#: Between two looks at the jobs.
POLL_SECONDS = 15.0


@dataclasses.dataclass
class Teardown:
    """What the teardown did: the executions and jobs it stopped, the jobs still running when it gave up."""

    executions_stopped: list[str] = dataclasses.field(default_factory=list)
    jobs_stopped: list[str] = dataclasses.field(default_factory=list)
    still_running: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)


def stop_everything(
    stepfunctions: Any,
    sagemaker: Any,
    state_machine_arn: str,
    job_name_prefix: str,
    *,
    stack_name: str,
    seconds_left: Callable[[], float | None],
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Teardown:
    """Stop the state machine's running executions and the jobs they launched; look again until no job of theirs
    runs and (when an execution was stopped) a train Lambda's timeout has passed, or ``seconds_left()`` runs out
    (then ``still_running`` names what still runs)."""
    done = Teardown()
    for execution_arn in _running_executions(stepfunctions, state_machine_arn):
        try:
            stepfunctions.stop_execution(
                executionArn=execution_arn,
                error=end_causes.STACK_DELETED,
                cause=f"the stack {stack_name} is being deleted: its executions and training jobs are stopped first",
            )
            done.executions_stopped.append(execution_arn)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ExecutionDoesNotExist":
                raise
    settled_at = (
        time_budgets.launch_settled_after(now(), time_budgets.TRAIN_TIMEOUT_SECONDS) if done.executions_stopped else 0.0
    )
    # as the jobs' tags carry an execution's ARN (contracts.aws_tags: characters a tag refuses replaced)
    executions_prefix = aws_tags.tag_value(state_machine_arn.replace(":stateMachine:", ":execution:", 1) + ":")
    while True:
        running = []
        for job in _jobs_of(sagemaker, job_name_prefix, executions_prefix):
            if job["TrainingJobStatus"] == "InProgress" and handler_support.stop_training_job(sagemaker, job["name"]):
                if job["name"] not in done.jobs_stopped:
                    done.jobs_stopped.append(job["name"])
            running.append(job["name"])
        left = seconds_left()
        if not running and now() >= settled_at:
            break
        if left is not None and left < POLL_SECONDS + 5:
            done.still_running = running
            break
        sleep(POLL_SECONDS)
    done.notes = [
        f"stopped {len(done.executions_stopped)} execution(s) and {len(done.jobs_stopped)} training job(s)",
        *(
            [f"still running: {', '.join(done.still_running)} (stop them with `aws sagemaker stop-training-job`)"]
            if done.still_running
            else []
        ),
    ]
    return done


def _running_executions(stepfunctions: Any, state_machine_arn: str) -> list[str]:
    arns: list[str] = []
    request: dict[str, Any] = {"stateMachineArn": state_machine_arn, "statusFilter": "RUNNING", "maxResults": 1000}
    while True:
        page = stepfunctions.list_executions(**request)
        arns += [execution["executionArn"] for execution in page.get("executions", [])]
        if not page.get("nextToken"):
            return arns
        request["nextToken"] = page["nextToken"]


def _jobs_of(sagemaker: Any, job_name_prefix: str, executions_prefix: str) -> list[dict[str, Any]]:
    """The stack's jobs still running or stopping whose tags name an execution of this state machine."""
    found = []
    for status in RUNNING_JOB_STATUSES:
        request: dict[str, Any] = {"NameContains": job_name_prefix, "StatusEquals": status, "MaxResults": 100}
        while True:
            page = sagemaker.list_training_jobs(**request)
            for summary in page.get("TrainingJobSummaries", []):
                name = summary["TrainingJobName"]
                if not name.startswith(f"{job_name_prefix}-"):
                    continue
                tags = {
                    tag["Key"]: tag["Value"] for tag in handler_support.job_tags(sagemaker, summary["TrainingJobArn"])
                }
                if tags.get(job_identity.EXECUTION_TAG, "").startswith(executions_prefix):
                    found.append({"name": name, "TrainingJobStatus": summary["TrainingJobStatus"]})
            if not page.get("NextToken"):
                break
            request["NextToken"] = page["NextToken"]
    return found
