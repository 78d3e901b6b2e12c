"""Stack-teardown Lambda: the custom resource CloudFormation deletes first when the stack is deleted
(infra/teardown.py). On Delete it stops the stack's running executions and their training jobs and waits until none
runs (``lambdas.remediation.job.stack_teardown``); on Create and Update it does nothing.

It answers CloudFormation itself (the custom resource protocol: a PUT of the result to the request's presigned
ResponseURL). A Delete that could not stop everything in time answers FAILED naming what still runs: the stack's
delete stops there, its role and Lambdas still in place, and running the delete again looks again.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from lambdas.remediation import handler_support
from lambdas.remediation.job import stack_teardown
from lambdas.remediation.job.job_identity import job_name_prefix
from lambdas.remediation.state import end_causes

logger = Logger(service=handler_support.SERVICE_NAME)
metrics = Metrics(namespace=handler_support.METRICS_NAMESPACE, service=handler_support.SERVICE_NAME)
tracer = Tracer(service=handler_support.SERVICE_NAME)

STATE_MACHINE_ARN_ENV = "STATE_MACHINE_ARN"
RESPONSE_TIMEOUT_SECONDS = 30
#: The clock the teardown waits on, and how it waits between looks (tests replace both).
now = time.time
sleep = time.sleep


def send_response(url: str, body: dict[str, Any]) -> None:
    """(Tests replace it.) PUT the custom resource's answer to CloudFormation's presigned URL (no content type: the URL is signed
    without one)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(data))}
    )
    with urllib.request.urlopen(request, timeout=RESPONSE_TIMEOUT_SECONDS) as answered:  # noqa: S310 - CloudFormation's https URL
        answered.read()


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@handler_support.counting_errors(metrics)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    handler_support.begin_invocation(context)
    request_type = event.get("RequestType", "")
    state_machine_arn = handler_support.environment_value(
        STATE_MACHINE_ARN_ENV, "the teardown stops this state machine's executions when the stack is deleted"
    )
    answer: dict[str, Any] = {
        "StackId": event.get("StackId"),
        "RequestId": event.get("RequestId"),
        "LogicalResourceId": event.get("LogicalResourceId"),
        "PhysicalResourceId": event.get("PhysicalResourceId") or f"{state_machine_arn}/teardown",
        "Status": "SUCCESS",
        "Data": {},
    }
    try:
        if request_type == "Delete":
            region = state_machine_arn.split(":")[3]
            done = stack_teardown.stop_everything(
                handler_support.client("stepfunctions", region),
                handler_support.client("sagemaker", region),
                state_machine_arn,
                job_name_prefix(),
                stack_name=_stack_name(str(event.get("StackId", ""))),
                seconds_left=handler_support.seconds_left,
                now=lambda: now(),
                sleep=lambda seconds: sleep(seconds),
            )
            metrics.add_metric(name="JobsStoppedOnStackDelete", unit=MetricUnit.Count, value=len(done.jobs_stopped))
            if done.still_running:
                metrics.add_metric(name=end_causes.UNHANDLED_ERRORS, unit=MetricUnit.Count, value=1)
            logger.info("teardown", extra={"notes": done.notes})
            answer["Data"] = {"ExecutionsStopped": len(done.executions_stopped), "JobsStopped": len(done.jobs_stopped)}
            if done.still_running:
                answer.update(Status="FAILED", Reason="; ".join(done.notes)[:1000])
    except Exception as error:  # noqa: BLE001 - CloudFormation must hear of it (or it waits an hour), and once
        logger.exception("teardown failed")
        metrics.add_metric(name=end_causes.UNHANDLED_ERRORS, unit=MetricUnit.Count, value=1)
        answer.update(Status="FAILED", Reason=f"{type(error).__name__}: {error}"[:1000])
    send_response(event["ResponseURL"], answer)
    return answer


def _stack_name(stack_id: str) -> str:
    """arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid> -> <name>."""
    parts = stack_id.split("/")
    return parts[1] if len(parts) > 2 else stack_id
