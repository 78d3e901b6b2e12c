"""`remediate cloud status --watch` and `remediate cloud stop` against a real execution: moto's interpreter running
the ASL with the real handlers (the harness), found through a stack's outputs as the CLI finds a deployed one."""

from __future__ import annotations

import argparse
import json
import time

import boto3
from workflow_harness import BASE_INPUT, REGION, completed, issues_found, running

from remediate import cloud_commands

SLOW_FALLBACK = {**BASE_INPUT, "monitor_interval_seconds": 60}


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="remediate")
    cloud_commands.register(parser.add_subparsers(dest="group", required=True))
    arguments = parser.parse_args(list(argv))
    return arguments.handler(arguments)


def stack_for(workflow, name: str = "TrainingRemediation") -> None:
    """A stack whose outputs name the harness's state machine (the CLI reads nothing else)."""
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName=name,
        TemplateBody=json.dumps(
            {
                "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                "Outputs": {
                    "StateMachineArn": {"Value": workflow.state_machine_arn},
                    "ArtifactsBucketName": {"Value": BASE_INPUT["bucket"]},
                    "SageMakerRoleArn": {"Value": BASE_INPUT["sm_role"]},
                },
            }
        ),
    )


def in_order(lines: list[str], expected: list[str]) -> bool:
    """Each expected text appears in a line, in this order."""
    position = 0
    for line in lines:
        if position < len(expected) and expected[position] in line:
            position += 1
    return position == len(expected)


def test_status_watch_prints_each_attempt_outcome_and_decision_live_and_ends_with_the_execution(workflow, capsys):
    sagemaker = workflow.script(
        [running(), issues_found("ExplodingTensor", step=2)], [running(), completed(after_seconds=0.5)]
    )
    stack_for(workflow)
    arn = workflow.start(BASE_INPUT)

    with workflow.only_waiting():  # the watch only reads: a wait with nothing under way ends by its fallback at once
        assert run_cli("cloud", "status", arn.rsplit(":", 1)[1], "--watch", "--poll-seconds", "0.2") == 0

    lines = capsys.readouterr().out.splitlines()
    first, second = (request["TrainingJobName"] for request in sagemaker.created)
    assert in_order(
        lines,
        [
            "following it",
            f"attempt 1: launched {first}",
            "attempt 1: issues_found (ExplodingTensor at step 2)",
            "attempt 1: AddBatchNorm: ",
            f"attempt 2: launched {second}",
            "attempt 2: completed",
            "SUCCEEDED: Job ",
        ],
    ), lines
    assert len([line for line in lines if "launched" in line]) == 2  # each change once, however many polls
    assert workflow.sfn.describe_execution(executionArn=arn)["status"] == "SUCCEEDED"


def test_status_watch_exits_1_when_the_execution_does_not_succeed(workflow, capsys):
    workflow.script([running()])
    stack_for(workflow)
    arn = workflow.start({**BASE_INPUT, "max_monitor_transitions": 2})
    with workflow.only_waiting():
        assert run_cli("cloud", "status", arn, "--watch", "--poll-seconds", "0.2") == 1
    lines = capsys.readouterr().out.splitlines()
    assert "attempt 1: monitor_limit" in "\n".join(lines)
    assert lines[-1].startswith("FAILED: ") and "MonitorLimitReached" in lines[-1]


def test_cloud_stop_stops_the_execution_and_the_job_it_launched(workflow, capsys):
    sagemaker = workflow.script([running()])
    stack_for(workflow)
    arn = workflow.start(SLOW_FALLBACK)
    deadline = time.monotonic() + 300
    while not any("WaitForJob" in json.dumps(event, default=str) for event in workflow.history(arn)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    job = sagemaker.created[0]["TrainingJobName"]

    assert run_cli("cloud", "stop", arn.rsplit(":", 1)[1], "--cause", "wrong data") == 0

    printed = capsys.readouterr().out
    assert f"stopped {arn}" in printed and f"stopped training job {job}" in printed
    assert sagemaker.stopped == [job]
    assert workflow.wait(arn)["status"] == "ABORTED"  # at once, as in AWS (local_runtime/interpreter_stop.py)
    assert workflow.history(arn)[-1]["type"] == "ExecutionAborted"


def test_cloud_stop_of_an_ended_execution_leaves_its_ended_job_alone(workflow, capsys):
    sagemaker = workflow.script([completed()])
    stack_for(workflow)
    arn = workflow.start(BASE_INPUT)
    workflow.wait(arn)
    assert run_cli("cloud", "stop", arn) == 0
    printed = capsys.readouterr().out
    assert "had already ended (SUCCEEDED)" in printed and "its last job had already ended" in printed
    assert sagemaker.stopped == []


def test_watching_reads_only_the_new_events(workflow):
    """After the first read, a poll asks for the newest events only, and stops at the last one it has seen."""
    from remediate.cloud_status import HistoryReader

    workflow.script([running(), completed()])
    arn = workflow.start(BASE_INPUT)
    pages = []

    class Counting:
        def get_execution_history(self, **request):
            page = workflow.sfn.get_execution_history(**request)
            pages.append((request.get("maxResults"), len(page["events"])))
            return page

    reader = HistoryReader(Counting(), arn)
    first = list(reader.read())
    while not first:  # the interpreter has not written the first event yet
        time.sleep(0.05)
        first = list(reader.read())
    workflow.wait(arn)
    pages.clear()
    events = reader.read()
    assert events == workflow.history(arn) and len(events) > len(first)
    assert pages == [(100, min(100, len(events)))]  # one small page, newest first


def test_cloud_stop_during_a_launch_looks_again_once_the_train_lambda_has_ended(workflow, faults, capsys, monkeypatch):
    """`remediate cloud stop` while the train Lambda is about to call CreateTrainingJob (and cannot check its
    execution: its DescribeExecution is throttled): the first look finds no job; the command waits out the train
    Lambda's timeout and looks again, and stops the job the Lambda created meanwhile."""
    import threading

    from remediate import cloud_stop

    sagemaker = workflow.script([running()])
    stack_for(workflow)
    faults.schedule.add("sfn", "DescribeExecution", "throttle", times=10, when=lambda call: True)
    monkeypatch.setattr(cloud_stop, "wait_until", faults.settle_launch)
    results: list[int] = []

    def stop_from_the_command_line() -> None:
        faults.first_look_done().clear()
        thread = threading.Thread(target=lambda: results.append(run_cli("cloud", "stop", workflow.execution_arn)))
        # set first: the execution reads ABORTED as soon as the command stops it, and the test goes on to join it
        stop_from_the_command_line.thread = thread
        thread.start()
        assert faults.first_look_done().wait(30), "the command never looked"

    faults.at("train", "CreateTrainingJob", stop_from_the_command_line)
    arn = workflow.start(SLOW_FALLBACK)
    workflow.wait(arn)
    stop_from_the_command_line.thread.join(60)

    assert results == [0]
    job = sagemaker.created[0]["TrainingJobName"]
    assert sagemaker.final_statuses() == {job: "Stopped"}
    printed = capsys.readouterr().out
    assert "waiting" in printed and "before looking again" in printed and f"stopped training job {job}" in printed
