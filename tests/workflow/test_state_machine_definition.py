"""The ASL file itself: statelint accepts it, substitutions are the agreed ones, the guardrails are there."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

from workflow_harness import ASL_PATH

TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


def _definition() -> dict:
    return json.loads(ASL_PATH.read_text())


def _statelint(path: pathlib.Path) -> subprocess.CompletedProcess:
    statelint = pathlib.Path(sys.executable).with_name("statelint")
    return subprocess.run([str(statelint), str(path)], capture_output=True, text=True, timeout=300)


def test_statelint_accepts_the_definition():
    result = _statelint(ASL_PATH)
    assert result.returncode == 0, result.stdout + result.stderr


def test_statelint_catches_a_choice_to_a_missing_state(tmp_path):
    broken = _definition()
    broken["States"]["AfterMonitor"]["Choices"][0]["Next"] = "NoSuchState"
    path = tmp_path / "broken.asl.json"
    path.write_text(json.dumps(broken))
    result = _statelint(path)
    assert result.returncode != 0 and "NoSuchState" in result.stdout


def test_only_the_agreed_definition_substitutions_are_used():
    text = ASL_PATH.read_text()
    assert set(re.findall(r"\$\{(\w+)\}", text)) == {
        "TrainFunctionArn",
        "MonitorFunctionArn",
        "PlanFunctionArn",
        "JobEventsFunctionArn",
    }


def test_every_lambda_task_retries_transient_errors_with_backoff_and_is_caught():
    states = _definition()["States"]
    tasks = {name: state for name, state in states.items() if state["Type"] == "Task"}
    assert set(tasks) == {"Initialize", "Train", "WaitForJob", "Monitor", "Plan", "HandleFailure"}
    for name, state in tasks.items():
        retry = state["Retry"][0]
        assert set(retry["ErrorEquals"]) == TRANSIENT_LAMBDA_ERRORS, name
        assert retry["BackoffRate"] > 1 and retry["MaxAttempts"] >= 3, name
        assert state["Catch"][-1]["ErrorEquals"] == ["States.ALL"], name
    assert tasks["Initialize"]["Catch"][0]["Next"] == "InitializeFailed"
    assert states["InitializeFailed"]["Next"] == "HandleFailure"
    for name in ("Train", "WaitForJob", "Monitor", "Plan"):
        assert tasks[name]["Catch"][-1]["Next"] == "HandleFailure"


def test_the_wait_is_a_callback_task_whose_timeout_is_the_fallback_poll():
    """The job's state change completes the wait (SendTaskSuccess with the task token); if none comes within
    monitor_interval_seconds, the timeout leads to one Monitor pass, with the state untouched."""
    wait = _definition()["States"]["WaitForJob"]
    assert wait["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
    assert wait["Parameters"]["FunctionName"] == "${JobEventsFunctionArn}"
    payload = wait["Parameters"]["Payload"]
    assert payload["action"] == "wait_for_job" and payload["task_token.$"] == "$$.Task.Token"
    assert payload["state.$"] == "$.state" and payload["execution_start_time.$"] == "$$.Execution.StartTime"
    assert wait["TimeoutSecondsPath"] == "$.state.monitor_interval_seconds"
    assert wait["ResultPath"] is None and wait["Next"] == "Monitor"
    timeout, everything_else = wait["Catch"]
    assert timeout == {"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": "Monitor"}
    assert everything_else["Next"] == "HandleFailure"
    assert all("States.Timeout" not in retry["ErrorEquals"] for retry in wait["Retry"])


def test_guardrails():
    definition = _definition()
    assert 0 < definition["TimeoutSeconds"] <= 7 * 24 * 3600
    assert definition["StartAt"] == "Initialize"
    text = json.dumps(definition)
    assert '"NumericLessThanEqualsPath": "$.state.max_monitor_transitions"' in text
    assert '"NumericLessThanPath": "$.state.max_num_retraining"' in text
    assert definition["States"]["WorkflowFailed"] == {
        "Type": "Fail",
        "Comment": definition["States"]["WorkflowFailed"]["Comment"],
        "ErrorPath": "$.Error",
        "CausePath": "$.Cause",
    }
