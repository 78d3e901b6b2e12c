"""Every path of the state machine, executed by moto's Step Functions interpreter with the real handlers."""

from __future__ import annotations

from workflow_harness import BASE_INPUT, Tick, completed, failed, issues_found, running, stopped


def test_issues_stop_plan_relaunch_complete(workflow):
    sagemaker = workflow.script(
        [running(), running(), issues_found("ExplodingTensor", step=2, initial_gradient_norm=512.0)],
        [running(), completed()],
    )
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    assert execution.event_types == ["job_launched", "issues_found", "job_launched", "completed"]
    first, second = (request["TrainingJobName"] for request in sagemaker.created)
    assert sagemaker.stopped == [first]  # the monitor stopped the exploding job
    assert sagemaker.hyperparameter(0, "add_batch_norm") == "false"
    assert sagemaker.hyperparameter(1, "add_batch_norm") == "true"  # evidence: init-scale gradients, no BN
    state = execution.output["state"]
    assert [attempt["outcome"] for attempt in state["attempts"]] == ["issues_found", "completed"]
    assert state["attempts"][0]["issue"]["rule"] == "ExplodingTensor"
    assert state["attempts"][0]["decision"]["remedy"] == "AddBatchNorm"
    assert state["history"]["num_retraining"] == 2  # every launch, as the AWS sample counts them
    assert state["history"]["num_monitor_transitions"] == 5
    assert state["attempts"][1]["metrics"] == {"test:accuracy": 0.97}
    assert first.startswith("remediation-") and second.endswith("-002") and first[:-4] == second[:-4]
    assert "ExplodingTensor at step 2" in execution.notifications[1]["subject"]


def test_budget_exhausted_ends_with_the_reason(workflow):
    sagemaker = workflow.script(
        [issues_found("ExplodingTensor", step=2)],
        [issues_found("ExplodingTensor", step=5, initial_gradient_norm=8.0)],
    )
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 2})  # two launches, the first included

    assert execution.status == "FAILED"
    assert execution.error == "RemediationBudgetExhausted"
    assert "budget is spent (2 launches of max_num_retraining=2)" in execution.cause
    assert len(sagemaker.created) == 2
    assert execution.event_types == ["job_launched", "issues_found", "job_launched", "gave_up"]


def test_invalid_input_fails_before_any_job_is_launched(workflow):
    sagemaker = workflow.script([completed()])
    execution = workflow.run({"bucket": "Bad_Bucket", "region": "us-east-1", "learning_rate": -1})

    assert execution.status == "FAILED"
    assert execution.error == "InvalidExecutionInput"
    for field in ("bucket", "learning_rate", "sm_role"):
        assert field in execution.cause
    assert sagemaker.created == []
    assert workflow.dispatch.calls_to("sagemaker", "CreateTrainingJob") == []
    assert execution.event_types == ["workflow_error"]


def test_an_input_that_is_not_an_object_fails_with_a_clear_error(workflow):
    sagemaker = workflow.script([completed()])
    execution = workflow.run(["bucket", "region"])

    assert execution.status == "FAILED"
    assert execution.error == "InvalidExecutionInput"
    assert "must be a JSON object" in execution.cause
    assert sagemaker.created == []
    assert execution.event_types == ["workflow_error"]


def test_handler_error_stops_the_job_and_fails_with_the_error(workflow):
    sagemaker = workflow.script([running(), running(rule_status="{not json")])
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "ContractError"
    assert "rule-status.json" in execution.cause and "stopped training job" in execution.cause
    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]]
    assert execution.event_types == ["job_launched", "workflow_error"]


def test_algorithm_error_ends_without_relaunch(workflow):
    sagemaker = workflow.script(
        [running(), failed("AlgorithmError: ExecuteUserScriptError: ExitCode 1 RuntimeError: shape mismatch")]
    )
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "TrainingAlgorithmError"
    assert "shape mismatch" in execution.cause
    assert len(sagemaker.created) == 1 and sagemaker.stopped == []
    assert execution.event_types == ["job_launched", "gave_up"]


def test_rule_stop_in_failure_reason_is_planned_like_an_issue(workflow):
    sagemaker = workflow.script(
        [failed("AlgorithmError: StopTraining: rule ExplodingTensor found an issue at step 3")],
        [completed()],
    )
    execution = workflow.run({**BASE_INPUT, "policy": "anchor"})

    assert execution.status == "SUCCEEDED", execution.cause
    assert execution.event_types == ["job_launched", "issues_found", "job_launched", "completed"]
    assert float(sagemaker.hyperparameter(1, "warmup_learning_rate")) == 0.05  # the sample's first rung
    assert execution.output["state"]["attempts"][0]["issue"] == {
        "rule": "ExplodingTensor",
        "step": 3,
        "tensor": "",
        "value": None,
        "phase": None,  # a failure text says no phase, and none is guessed
        "kind": None,
        "message": "AlgorithmError: StopTraining: rule ExplodingTensor found an issue at step 3",
        # an older job's text says one step: its global step, the optimizer step not told apart (contracts.step_names)
        "optimizer_step": None,
        "evaluation_pass": False,
    }


def test_capacity_error_is_retried_once_with_the_same_spec(workflow):
    sagemaker = workflow.script(
        [failed("CapacityError: Unable to provision requested ML compute capacity.")],
        [running(), completed()],
    )
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    first, second = sagemaker.created
    assert first["TrainingJobName"] != second["TrainingJobName"]
    def same_spec(hyperparameters):  # the debugger's configuration names the job; everything else is the same
        return {key: value for key, value in hyperparameters.items() if not key.startswith("remediation_debugger_")}

    assert same_spec(first["HyperParameters"]) == same_spec(second["HyperParameters"])
    assert execution.output["state"]["history"]["capacity_retries"] == 1
    assert execution.output["state"]["history"]["num_retraining"] == 2  # a relaunch is a launch (the sample's count)
    assert execution.event_types == ["job_launched", "job_launched", "completed"]


def test_capacity_error_twice_gives_up(workflow):
    workflow.script(
        [failed("CapacityError: Unable to provision requested ML compute capacity.")],
        [failed("InternalServerError: We encountered an internal error. Please try again.")],
    )
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "TrainingCapacityError"
    assert execution.event_types == ["job_launched", "job_launched", "gave_up"]


def test_job_stopped_by_someone_else_ends(workflow):
    sagemaker = workflow.script([running(), stopped()])
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "TrainingJobStopped"
    assert "stopped outside the workflow" in execution.cause
    assert sagemaker.stopped == []
    assert execution.event_types == ["job_launched", "gave_up"]


def test_spot_interruption_keeps_monitoring(workflow):
    sagemaker = workflow.script(
        [running(secondary="Interrupted"), running(secondary="Restarting"), running(), completed()]
    )
    execution = workflow.run({**BASE_INPUT, "use_spot_instances": True})

    assert execution.status == "SUCCEEDED", execution.cause
    assert len(sagemaker.created) == 1
    assert sagemaker.created[0]["EnableManagedSpotTraining"] is True
    assert execution.output["state"]["history"]["num_monitor_transitions"] == 4
    assert execution.event_types == ["job_launched", "completed"]


def test_monitor_limit_stops_the_job_and_ends(workflow):
    sagemaker = workflow.script([running()])
    execution = workflow.run({**BASE_INPUT, "max_monitor_transitions": 3})

    assert execution.status == "FAILED"
    assert execution.error == "MonitorLimitReached"
    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]]
    assert execution.output is None
    assert execution.event_types == ["job_launched", "gave_up"]


def test_a_retried_train_task_never_launches_a_second_job(workflow):
    """The Train Lambda ran (the job exists) but Step Functions saw Lambda.TooManyRequestsException and retried."""
    from local_runtime.botocore_dispatch import ServiceError

    sagemaker = workflow.script([running(), completed()])
    train_invocations = []

    def invoke_losing_the_first_train_answer(call):
        answer = workflow.dispatch.invoke_lambda_function(call)
        if call.params["FunctionName"].endswith(":remediation-train"):
            train_invocations.append(call)
            if len(train_invocations) == 1:
                raise ServiceError("TooManyRequestsException", "Rate exceeded", status_code=429)
        return answer

    workflow.dispatch.register("lambda", "Invoke", invoke_losing_the_first_train_answer)
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    assert len(train_invocations) == 2  # retried by the ASL's Retry on Lambda.TooManyRequestsException
    assert len(sagemaker.created) == 1  # the second try found its own job (ResourceInUse) and did not launch another
    assert len(execution.output["state"]["attempts"]) == 1


def test_a_job_name_another_execution_holds_is_never_adopted_nor_stopped(workflow):
    """A reused execution name must not take over (or clean up) the job its namesake launched."""
    sagemaker = workflow.script([running(), completed()])
    sagemaker.take_every_name()
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "JobNameTaken"
    assert "its tags do not name this execution" in execution.cause
    assert sagemaker.created == [] and sagemaker.stopped == []  # nothing launched, the other job left alone
    assert "left training job" in execution.cause and "tags name another execution" in execution.cause


def test_the_asl_guard_stops_a_monitor_that_would_wait_forever(workflow):
    """If the monitor ever answered "wait" past max_monitor_transitions, the Choice guard ends it (and cleans up)."""
    from lambdas import monitor_handler

    sagemaker = workflow.script([running()])

    def monitor_that_always_waits(event, context):
        answer = monitor_handler.handler(event, context)
        if event.get("action") != "cleanup":
            answer["next_step"] = "wait"
        return answer

    workflow.dispatch.register_lambda_function("remediation-monitor", monitor_that_always_waits)
    execution = workflow.run({**BASE_INPUT, "max_monitor_transitions": 2})

    assert execution.status == "FAILED"
    assert execution.error == "MonitorLimitExceeded"
    # two polls are allowed (the sample's meaning); the third is past the limit
    assert "after 3 monitor transitions (max_monitor_transitions=2)" in execution.cause
    # the handler already stopped it at the limit; cleanup found it no longer running and left it alone
    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]]
    assert execution.event_types[0] == "job_launched" and execution.event_types[-1] == "workflow_error"


def test_the_asl_guard_refuses_a_relaunch_beyond_the_budget(workflow):
    """If the planner ever asked for a relaunch past max_num_retraining, the Choice guard fails instead."""
    from lambdas import plan_handler

    sagemaker = workflow.script([issues_found("ExplodingTensor", step=2)], [completed()])

    def plan_that_ignores_the_budget(event, context):
        answer = plan_handler.handler(event, context)
        if event.get("action") != "initialize":
            answer["state"]["history"]["num_retraining"] = answer["state"]["max_num_retraining"] + 1
        return answer

    workflow.dispatch.register_lambda_function("remediation-plan", plan_that_ignores_the_budget)
    execution = workflow.run({**BASE_INPUT, "max_num_retraining": 2})

    assert execution.status == "FAILED"
    assert execution.error == "RetrainingBudgetExceeded"
    assert "asked for another launch after 3 launches but max_num_retraining is 2" in execution.cause
    assert len(sagemaker.created) == 1


def test_a_job_that_misses_the_objective_is_relaunched_with_its_remedy_until_it_meets_it(workflow):
    sagemaker = workflow.script([completed(test_accuracy=0.48)], [running(), completed(test_accuracy=0.96)])
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    assert execution.event_types == ["job_launched", "issues_found", "job_launched", "completed"]
    # the example's objective_missed remedy: its 2 epochs are too short to read the loss's course, so 4 times longer
    assert sagemaker.hyperparameter(1, "num_epochs") == "8"
    state = execution.output["state"]
    assert [attempt["outcome"] for attempt in state["attempts"]] == ["objective_missed", "completed"]
    assert [attempt["objective_value"] for attempt in state["attempts"]] == [0.48, 0.96]
    assert "Objective missed (test:accuracy 0.48 (>= 0.9))" in execution.notifications[1]["subject"]
    assert "test:accuracy 0.96 (>= 0.9)" in execution.notifications[3]["subject"]


def test_a_job_that_misses_the_objective_with_no_remedy_left_fails_saying_by_how_much(workflow):
    workflow.script([completed(test_accuracy=0.48)])
    execution = workflow.run({**BASE_INPUT, "policy": "anchor"})  # the sample's ladder has no objective remedy

    assert execution.status == "FAILED"
    assert execution.error == "ObjectiveMissed"
    assert "missed test:accuracy >= 0.9 by 0.42" in execution.cause


def test_a_job_that_never_reports_the_objectives_metric_fails_with_objective_unmeasured(workflow):
    workflow.script([completed(train_loss=0.1)])
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "ObjectiveUnmeasured"
    assert "never reported test:accuracy" in execution.cause


def test_a_job_that_completes_without_ever_writing_its_rule_status_is_missing_evidence(workflow):
    workflow.script([Tick(status="Completed", secondary="Completed")])  # no rule-status.json was ever written
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "MissingEvidence"
    assert "never reported a rule status" in execution.cause
    assert execution.output is None or execution.output["state"]["attempts"][0]["outcome"] == "missing_evidence"
    assert execution.event_types == ["job_launched", "gave_up"]
    assert "rules never reported" in execution.notifications[-1]["subject"]


def test_a_throttled_read_is_waited_out_and_never_stops_a_healthy_job(workflow):
    from local_runtime.botocore_dispatch import ServiceError

    sagemaker = workflow.script([running(), running(), running(), completed()])
    workflow.on_launch(
        lambda name: sagemaker.describe_failures.update(
            {(name, 2): ServiceError("ThrottlingException", "Rate exceeded", status_code=400)}
        )
    )
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    assert sagemaker.stopped == []
    assert execution.output["state"]["history"]["consecutive_read_failures"] == 0
    assert execution.event_types == ["job_launched", "completed"]


def test_a_throttled_launch_is_retried_by_the_state_machine_and_launches_one_job(workflow):
    from local_runtime.botocore_dispatch import ServiceError

    sagemaker = workflow.script([running(), completed()])
    sagemaker.create_failures.append(ServiceError("ThrottlingException", "Rate exceeded", status_code=400))
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    assert len(sagemaker.created) == 1
    assert execution.event_types == ["job_launched", "completed"]


def test_the_cleanup_never_stops_a_job_it_could_not_read(workflow):
    """A read refused for good (AccessDenied) proves nothing about the job: it is left alone, and said so."""
    from local_runtime.botocore_dispatch import ServiceError

    sagemaker = workflow.script([running(), running(rule_status="{not json")])
    workflow.on_launch(
        lambda name: sagemaker.describe_failures.update(
            {(name, 3): ServiceError("AccessDeniedException", "not authorized", status_code=400)}
        )
    )
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED" and execution.error == "ContractError"
    assert sagemaker.stopped == []
    assert "could not check or stop training job" in execution.cause and "left it as it is" in execution.cause


def test_a_cleanup_read_that_fails_transiently_is_retried_and_stops_the_job(workflow):
    """A throttled read in HandleFailure is retried (AwsTransientError): the job is stopped at the next try."""
    from local_runtime.botocore_dispatch import ServiceError

    sagemaker = workflow.script([running(), running(rule_status="{not json")])
    workflow.on_launch(
        lambda name: sagemaker.describe_failures.update(
            {(name, 3): ServiceError("ThrottlingException", "Rate exceeded", status_code=400)}
        )
    )
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED" and execution.error == "ContractError"
    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]]
    assert "stopped training job" in execution.cause


def test_no_job_is_launched_when_the_execution_is_about_to_time_out(workflow, monkeypatch):
    """The train Lambda reads the execution's start time from its task payload: 47.6 h into the 48 h there is no
    time left for a job, so none is launched and the workflow fails saying why."""
    from lambdas.remediation.job import job_request

    sagemaker = workflow.script([completed()])
    real_clock = job_request.wall_clock
    monkeypatch.setattr(job_request, "wall_clock", lambda: real_clock() + 47.6 * 3600)
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "FAILED"
    assert execution.error == "NotEnoughTimeLeft"
    assert "before the execution times out" in execution.cause and "not launching" in execution.cause
    assert sagemaker.created == []
