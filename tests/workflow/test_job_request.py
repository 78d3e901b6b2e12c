"""Job names, images and the request's parts."""

from __future__ import annotations

import json
import re

import pytest

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.job import job_identity, job_request

NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
INPUT = {"bucket": "artifacts-bucket", "region": "us-west-2", "sm_role": "arn:aws:iam::123456789012:role/SageMaker"}


def test_job_names_are_deterministic_valid_and_distinct(monkeypatch):
    monkeypatch.setenv("JOB_NAME_PREFIX", "remediation")
    name = job_identity.training_job_name("a" * 80, "b" * 32, 7)
    assert name == job_identity.training_job_name("a" * 80, "b" * 32, 7)
    assert len(name) <= 63 and NAME.match(name) and name.startswith("remediation-")
    assert name != job_identity.training_job_name("a" * 80, "b" * 32, 8)
    assert name != job_identity.training_job_name("a" * 79 + "c", "b" * 32, 7)
    assert NAME.match(job_identity.training_job_name("run_1", "-x--y-", 1))
    assert job_identity.training_job_name("e", "remediation-resnet", 1).startswith("remediation-resnet-")
    assert job_identity.training_job_name("e", "remediation", 1).count("remediation") == 1


def test_job_name_prefix_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("JOB_NAME_PREFIX", "team-a")
    assert job_identity.training_job_name("e", "resnet", 1).startswith("team-a-resnet-")
    monkeypatch.setenv("JOB_NAME_PREFIX", "bad prefix!")
    with pytest.raises(job_request.JobRequestError, match="JOB_NAME_PREFIX"):
        job_identity.training_job_name("e", "resnet", 1)


def test_training_image_by_region_and_instance_family():
    """The tables and their sources live in training_images (tests/workflow/test_training_images.py)."""
    assert job_request.training_image_uri("us-west-2", "ml.m5.xlarge") == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch:2.13.0-cpu-amzn2023-sagemaker"
    )
    assert job_request.training_image_uri("eu-south-1", "ml.g5.xlarge") == (
        "692866216735.dkr.ecr.eu-south-1.amazonaws.com/pytorch:2.13.0-cu133-amzn2023-sagemaker"
    )
    assert job_request.training_image_uri("cn-north-1", "ml.p4d.24xlarge").endswith(
        ".amazonaws.com.cn/pytorch:2.13.0-cu133-amzn2023-sagemaker"
    )
    with pytest.raises(ValueError, match="instance_type"):
        job_request.training_image_uri("us-east-1", "ml.trn1.2xlarge")


def test_legacy_mode_asks_sagemaker_for_its_builtin_rules():
    state = initial_state({**INPUT, "legacy_sagemaker_debugger": True})
    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    rules = request["DebugRuleConfigurations"]
    assert {rule["RuleEvaluatorImage"] for rule in rules} == {
        "895741380848.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rules:latest"
    }
    exploding = next(rule for rule in rules if rule["RuleParameters"]["rule_to_invoke"] == "ExplodingTensor")
    assert '"StopTraining"' in exploding["RuleParameters"]["action_json"]
    assert request["DebugHookConfig"]["HookParameters"]["save_interval"] == "10"
    assert request["DebugHookConfig"]["S3OutputPath"] == "s3://artifacts-bucket/debug-output/"


def test_legacy_mode_in_a_region_without_the_rule_evaluator_is_refused_before_any_launch():
    from lambdas.remediation.state.validation_messages import InvalidExecutionInput

    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**INPUT, "region": "il-central-1", "legacy_sagemaker_debugger": True})
    assert "rule evaluator is not published" in caught.value.problems["legacy_sagemaker_debugger"]


def test_an_image_that_does_not_exist_for_the_region_or_instance_is_refused_before_any_launch():
    from lambdas.remediation.state.validation_messages import InvalidExecutionInput

    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**INPUT, "region": "us-gov-west-1"})
    assert "not published in 'us-gov-west-1'" in caught.value.problems["region"]
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**INPUT, "instance_type": "ml.trn1.2xlarge"})
    assert "needs a Neuron image" in caught.value.problems["instance_type"]


def test_request_parts_follow_the_bucket_layout():
    state = initial_state({**INPUT, "max_run_seconds": 7200, "use_spot_instances": True})
    request = job_request.build_create_training_job_request(state, "remediation-x-001", execution_id="arn:aws:states:us-east-1:123456789012:execution:m:exec", execution_start_time="2026-11-23T08:00:00Z", now=1_795_420_800.0 + 60)
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://artifacts-bucket/jobs/"}
    assert request["CheckpointConfig"]["S3Uri"] == "s3://artifacts-bucket/checkpoints/remediation-x-001/"
    assert [channel["DataSource"]["S3DataSource"]["S3Uri"] for channel in request["InputDataConfig"]] == [
        "s3://artifacts-bucket/data/train/",
        "s3://artifacts-bucket/data/test/",
    ]
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 7200, "MaxWaitTimeInSeconds": 14400}
    assert request["Environment"] == {"DEBUG_OUTPUT_S3_SYNC": "on", "DEBUG_OUTPUT_S3_REGION": "us-west-2"}  # the mirror signs for it
    assert {"Key": "remediation:execution", "Value": "arn:aws:states:us-east-1:123456789012:execution:m:exec"} in request["Tags"]
    assert [definition["Name"] for definition in request["AlgorithmSpecification"]["MetricDefinitions"]][
        0
    ] == "train:loss"


@pytest.mark.parametrize(("save_interval", "expected_window"), [(1, 20), (10, 20), (100, 20)])
def test_loss_not_decreasing_window_is_in_steps_whatever_the_save_interval(save_interval, expected_window):
    # the hook records the loss at every step: a window scaled by the save interval (50 steps at the default
    # 10) outlasted the reference job's 40 steps, and the rule could never fire
    import json

    from contracts.job import RULE_CONFIGS_HYPERPARAMETER as DEBUGGER_RULE_CONFIGS

    state = initial_state({**INPUT, "debugger_save_interval": save_interval})
    request = job_request.build_create_training_job_request(state, "remediation-x-001", execution_id="arn:aws:states:us-east-1:123456789012:execution:m:exec", execution_start_time="2026-11-23T08:00:00Z", now=1_795_420_800.0 + 60)
    rules = json.loads(json.loads(request["HyperParameters"][DEBUGGER_RULE_CONFIGS]))
    (loss_rule,) = [rule for rule in rules if rule["RuleConfigurationName"] == "LossNotDecreasing"]
    assert loss_rule["RuleParameters"]["num_steps"] == str(expected_window)


def test_job_names_differ_for_a_reused_execution_name_and_tags_prove_ownership():
    arn = "arn:aws:states:us-east-1:123456789012:execution:remediation:nightly"
    first = job_identity.training_job_name(job_identity.execution_identity(arn, "2026-11-01T10:00:00Z"), "resnet", 1)
    again = job_identity.training_job_name(job_identity.execution_identity(arn, "2026-12-20T10:00:00Z"), "resnet", 1)
    assert first != again  # the same name, 90 days later: a different execution, a different job
    tags = [{"Key": key, "Value": value} for key, value in job_identity.ownership_tags(arn, "2026-11-01T10:00:00Z", 1).items()]
    assert job_identity.owned_by(tags, arn, "2026-11-01T10:00:00Z")
    assert not job_identity.owned_by(tags, arn, "2026-12-20T10:00:00Z")
    assert not job_identity.owned_by([], arn, "2026-11-01T10:00:00Z")
    with pytest.raises(job_request.JobRequestError, match="execution_start_time"):
        job_identity.execution_identity(arn, "")


# --------------------------------------------------------------------------- the job's time within the execution's

STARTED = "2026-11-23T08:00:00.000Z"
STARTED_EPOCH = 1_795_420_800.0  # 2026-11-23T08:00:00Z
EXECUTION = "arn:aws:states:us-west-2:123456789012:execution:remediation:run"


def _stopping_condition(state, hours_into_the_execution: float) -> dict:
    request = job_request.build_create_training_job_request(
        state,
        "remediation-x-001",
        execution_id=EXECUTION,
        execution_start_time=STARTED,
        now=STARTED_EPOCH + hours_into_the_execution * 3600,
    )
    return request["StoppingCondition"]


def test_a_job_gets_at_most_the_time_the_execution_has_left():
    """47 h into a 48 h execution, a job asking for an hour gets what is left before the timeout, minus the time
    its stop, the monitor and the plan need, so the execution never times out under a running job."""
    from contracts import run_spec as bounds

    state = initial_state({**INPUT, "max_run_seconds": 3600})
    assert _stopping_condition(state, 1) == {"MaxRuntimeInSeconds": 3600}
    left = bounds.EXECUTION_TIMEOUT_SECONDS - 47 * 3600 - bounds.JOB_END_RESERVE_SECONDS
    assert _stopping_condition(state, 47) == {"MaxRuntimeInSeconds": left}


def test_a_spot_jobs_wait_for_capacity_is_also_within_the_time_left():
    from contracts import run_spec as bounds

    state = initial_state({**INPUT, "max_run_seconds": 3600, "use_spot_instances": True})
    assert _stopping_condition(state, 1) == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": 7200}
    left = bounds.EXECUTION_TIMEOUT_SECONDS - int(46.5 * 3600) - bounds.JOB_END_RESERVE_SECONDS
    assert _stopping_condition(state, 46.5) == {"MaxRuntimeInSeconds": 3600, "MaxWaitTimeInSeconds": left}


def test_no_job_is_launched_when_the_execution_has_no_time_left_for_it():
    state = initial_state(INPUT)
    with pytest.raises(job_request.NotEnoughTimeLeft) as caught:
        _stopping_condition(state, 47.6)
    message = str(caught.value)
    assert "execution_start_time" in message and "48 h" in message and "not launching" in message


@pytest.mark.parametrize("legacy", [False, True])
def test_every_rule_stops_the_job_itself_so_its_state_change_wakes_the_workflow(legacy):
    """The workflow waits for the job's state change (the wait's timeout is only a slow fallback): a rule that found
    an issue but let the job run would be noticed only at the fallback. Every rule, ours and SageMaker's built-in
    ones, ends the job with its StopTraining action, as the monitor would on IssuesFound."""
    from contracts import debugger_config
    from contracts.job import RULE_CONFIGS_HYPERPARAMETER

    state = initial_state({**INPUT, "legacy_sagemaker_debugger": legacy})
    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    rules = (
        request["DebugRuleConfigurations"]
        if legacy
        else json.loads(json.loads(request["HyperParameters"][RULE_CONFIGS_HYPERPARAMETER]))
    )
    # the default rules; SageMaker's evaluator has no ObjectiveOutOfReach, so legacy mode runs ours alone for it
    names = [rule["RuleConfigurationName"] for rule in rules]
    expected = ["ExplodingTensor", "VanishingGradient", "LossNotDecreasing"]
    assert names == (["Sagemaker" + name for name in expected] if legacy else [*expected, "ObjectiveOutOfReach"])
    for rule in rules:
        actions = debugger_config.parse_actions(rule["RuleParameters"]["action_json"])
        assert actions == [{"name": "StopTraining", "training_job_prefix": "remediation-x-001"}], rule


@pytest.mark.parametrize("legacy", [False, True])
def test_the_run_specs_rules_are_the_jobs_rules_each_stopping_it(legacy):
    from contracts import debugger_config
    from contracts.job import RULE_CONFIGS_HYPERPARAMETER

    selected = ["ExplodingTensor", {"name": "LossNotDecreasing", "parameters": {"num_steps": "40", "diff_percent": "5"}}]
    state = initial_state({**INPUT, "rules": selected, "legacy_sagemaker_debugger": legacy})
    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    rules = (
        request["DebugRuleConfigurations"]
        if legacy
        else json.loads(json.loads(request["HyperParameters"][RULE_CONFIGS_HYPERPARAMETER]))
    )
    assert [rule["RuleParameters"]["rule_to_invoke"] for rule in rules] == ["ExplodingTensor", "LossNotDecreasing"]
    # The run_spec's parameters win over the workflow's own default window.
    assert rules[1]["RuleParameters"]["num_steps"] == "40" and rules[1]["RuleParameters"]["diff_percent"] == "5"
    for rule in rules:
        assert debugger_config.parse_actions(rule["RuleParameters"]["action_json"])[0]["name"] == "StopTraining"


@pytest.mark.parametrize("legacy", [False, True])
def test_objective_out_of_reach_selected_gets_the_jobs_planned_epochs_and_has_no_sagemaker_twin(legacy):
    """The product's own rule judges each job against the epochs it trains (the run's num_epochs knob); SageMaker's
    evaluator has no such rule, so legacy mode runs ours alone for it."""
    from contracts.job import RULE_CONFIGS_HYPERPARAMETER

    state = initial_state({**INPUT, "rules": ["ExplodingTensor", "ObjectiveOutOfReach"], "legacy_sagemaker_debugger": legacy})
    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    ours = json.loads(json.loads(request["HyperParameters"][RULE_CONFIGS_HYPERPARAMETER]))
    reach = next(rule for rule in ours if rule["RuleConfigurationName"] == "ObjectiveOutOfReach")
    assert reach["RuleParameters"]["planned_epochs"] == str(state.run_spec.hyperparameters["num_epochs"])
    assert json.loads(reach["RuleParameters"]["objective"]) == state.objective
    if legacy:
        assert [rule["RuleConfigurationName"] for rule in request["DebugRuleConfigurations"]] == ["SagemakerExplodingTensor"]


def test_a_bad_rule_selection_is_refused_before_any_launch():
    from lambdas.remediation.execution_input import InvalidExecutionInput

    with pytest.raises(InvalidExecutionInput, match=r"rules\[0\]\.parameters\.threshold: must be a string"):
        initial_state({**INPUT, "rules": [{"name": "VanishingGradient", "parameters": {"threshold": 1e-6}}]})


def test_a_rule_that_could_never_fire_is_refused_before_any_launch_naming_the_setting():
    from lambdas.remediation.execution_input import InvalidExecutionInput

    with pytest.raises(InvalidExecutionInput, match=r"rules\[1\]\.parameters\.threshold_layer: DeadRelu: is 100"):
        initial_state({**INPUT, "rules": ["ExplodingTensor", {"name": "DeadRelu", "parameters": {"threshold_layer": "100"}}]})


def test_sagemakers_evaluator_gets_the_collections_the_selected_rules_read():
    """In legacy mode SageMaker's own rules read what its hook saved: WeightUpdateRatio the weights, DeadRelu and
    SaturatedActivation the activations their regexes name (smdebug's PyTorch hook has no built-in collection for
    them). Our own rules ask the in-job hook for what they read themselves."""
    state = initial_state({**INPUT, "legacy_sagemaker_debugger": True,
                           "rules": ["WeightUpdateRatio", "DeadRelu", "SaturatedActivation", "ClassImbalance"]})
    legacy = job_request.legacy_debug_hook_config(state.run_spec)["CollectionConfigurations"]
    assert legacy == [
        {"CollectionName": "losses"},
        {"CollectionName": "gradients"},
        {"CollectionName": "weights"},
        {"CollectionName": "activations",
         "CollectionParameters": {"include_regex": ".*relu_output,.*tanh_input,.*sigmoid_input"}},
    ]


def test_every_run_spec_the_validation_accepts_builds_its_first_jobs_request_whatever_its_objective():
    """The validation counts the hyperparameters the job will get, the rules' configuration with the run's objective
    and planned epochs included: every PyTorch rule and a long metric name take the configuration into a fourth part, so a
    run_spec one hyperparameter short of SageMaker's limit without them is over the limit with them."""
    from contracts.debugger_config import BUILTIN_RULE_DEFAULTS
    from contracts.rule_selection import XGBOOST_ONLY_RULES
    from lambdas.remediation.execution_input import InvalidExecutionInput

    objective = {"metric_name": "validation:" + "x" * 205, "type": "Maximize", "target_value": 0.9}
    rules = [
        {"name": name, "parameters": {"start_step": "0", "end_step": "1000000", **({"max_threshold": "1e6"} if name == "TensorVariance" else {})}}
        for name in BUILTIN_RULE_DEFAULTS
        if name not in XGBOOST_ONLY_RULES
    ]  # fmt: skip

    def state_with(count: int):
        return initial_state(
            {
                **INPUT,
                "source_dir": "s3://artifacts-bucket/code/x.tar.gz",
                "entry_point": "train.py",
                "hyperparameters": {"epochs": 12, **{f"h{index}": index for index in range(count - 1)}},
                "hyperparameter_names": {"num_epochs": "epochs"},
                "rules": rules,
                "objective": objective,
                "metric_definitions": [{"Name": objective["metric_name"], "Regex": "acc=([0-9.]+)"}],
                "instance_type": "ml.g5.xlarge",
                "instance_count": 2,
                "distribution": {"torch_distributed": {"enabled": True}},
            }
        )

    for count in range(70, 101):
        try:
            state_with(count)
        except InvalidExecutionInput as refused:
            assert f"hyperparameters: has {count} entries" in str(refused)
            assert f"keep at most {count - 1} (or select fewer rules)" in str(refused)
            break
    else:
        pytest.fail("no hyperparameter count up to SageMaker's 100 was refused")
    request = job_request.build_create_training_job_request(state_with(count - 1), "a" * job_request.MAX_JOB_NAME_LENGTH)
    assert len(request["HyperParameters"]) == job_request.MAX_HYPERPARAMETERS


def test_the_count_is_the_requests_own_and_says_how_many_are_left():
    """count_hyperparameters counts exactly what the request carries: the run_spec's entries, the launcher's, the
    debugger's hook and rules (in parts), the in-job settings, SageMaker's script-mode and distribution entries."""
    from contracts.debugger_config import BUILTIN_RULE_DEFAULTS
    from contracts.rule_selection import XGBOOST_ONLY_RULES

    rules = [
        {"name": name, "parameters": {"max_threshold": "1e6"} if name == "TensorVariance" else {}}
        for name in BUILTIN_RULE_DEFAULTS
        if name not in XGBOOST_ONLY_RULES
    ]
    state = initial_state(
        {
            **INPUT,
            "source_dir": "s3://artifacts-bucket/code/x.tar.gz",
            "entry_point": "train.py",
            "hyperparameters": {f"h{index}": index for index in range(80)},
            "rules": rules,
            "instance_type": "ml.g5.xlarge",
            "instance_count": 2,
            "distribution": {"torch_distributed": {"enabled": True}},
        }
    )
    name = "a" * job_request.MAX_JOB_NAME_LENGTH
    count = job_request.count_hyperparameters(state)
    request = job_request.build_create_training_job_request(state, name)
    assert count.carried == len(request["HyperParameters"]) and count.own == 80
    assert count.left == 100 - count.carried and count.reserved == count.carried - 80

    with_settings = state.run_spec.model_copy(
        update={"debugger_class_weighting": "balanced", "debugger_robust_loss": "generalized_cross_entropy"}
    )
    more = job_request.count_hyperparameters(state, with_settings, job_name=name)
    assert more.carried == count.carried + 2
    over = state.updated(run_spec=with_settings.model_copy(update={"hyperparameters": {f"h{i}": i for i in range(80 + more.left + 1)}}))
    with pytest.raises(job_request.TooManyHyperparameters) as refused:
        job_request.build_create_training_job_request(over, name)
    assert str(refused.value) == job_request.count_hyperparameters(over).problem()
    assert "would carry 101" in str(refused.value) and f"keep at most {80 + more.left}" in str(refused.value)


def _planned_epochs_of(state) -> str | None:
    from contracts.job import RULE_CONFIGS_HYPERPARAMETER

    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    rules = json.loads(json.loads(request["HyperParameters"][RULE_CONFIGS_HYPERPARAMETER]))
    reach = next(rule for rule in rules if rule["RuleConfigurationName"] == "ObjectiveOutOfReach")
    return reach["RuleParameters"].get("planned_epochs")


SCRIPT = {
    **INPUT,
    "source_dir": "s3://artifacts-bucket/code/sourcedir.tar.gz",
    "entry_point": "train.py",
    "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
}


@pytest.mark.parametrize(
    ("hyperparameters", "remedies", "expected"),
    [
        # declared remedies refuse hyperparameter_names: the epochs come from the hyperparameters' own names
        ({"lr": 0.1, "num_epochs": 12}, {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4}]}, "12"),
        ({"lr": 0.1, "n-epochs": 9}, {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4}]}, "9"),
        # a hyperparameter the declared remedies set to the best epoch is the epoch count, whatever its name
        ({"lr": 0.1, "passes": 20}, {"objective_missed": [{"hyperparameter": "passes", "to_best_epoch": True}]}, "20"),
    ],
)
def test_a_run_with_declared_remedies_gives_objective_out_of_reach_its_epochs(hyperparameters, remedies, expected):
    state = initial_state({**SCRIPT, "hyperparameters": hyperparameters, "remedies": remedies})
    assert state.policy == "declared" and not state.hyperparameter_names
    assert _planned_epochs_of(state) == expected


def test_without_an_epoch_count_the_rule_gets_none_and_its_status_says_so():
    """(tests/debugger/rules/test_objective_rules.py: the job's status names the rule and why.)"""
    state = initial_state({**SCRIPT, "hyperparameters": {"lr": 0.1, "steps": 500},
                           "remedies": {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-4}]}})
    assert _planned_epochs_of(state) is None
