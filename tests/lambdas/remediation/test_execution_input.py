"""The execution input: the built-in example (the AWS sample's keys) or the user's own script, checked before
anything is launched."""

import json

import pytest

from lambdas.remediation.execution_input import ExecutionInput, default_execution_input, initial_state
from lambdas.remediation.planning.ladders import run_remedies
from lambdas.remediation.state.validation_messages import InvalidExecutionInput

SCRIPT = {
    "source_dir": "s3://remediation-artifacts-123456789012/code/mlp-0123456789abcdef/sourcedir.tar.gz",
    "entry_point": "train.py",
    "hyperparameters": {"lr": 0.1, "grad_clip": 0, "epochs": 3, "optimizer": "sgd"},
    "channels": {"train": "s3://remediation-artifacts-123456789012/data/train-0123456789abcdef/"},
    "metric_definitions": [{"Name": "validation:accuracy", "Regex": r"val_acc=([0-9.]+)"}],
    "objective": {"metric_name": "validation:accuracy", "type": "Maximize", "target_value": 0.9},
    "remedies": {
        "ExplodingTensor": [
            {"hyperparameter": "grad_clip", "set_to": 1.0},
            {"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-5},
        ],
        "objective_missed": [{"hyperparameter": "epochs", "multiply_by": 2, "max": 24}],
    },
}


def test_with_no_script_the_run_is_the_built_in_example_with_the_samples_keys(account_input):
    state = initial_state(account_input)
    spec = state.run_spec
    assert spec.entry_point == "train.py"
    assert spec.source_dir == f"s3://{account_input['bucket']}/code/sourcedir.tar.gz"
    assert spec.hyperparameters == {
        "warmup_learning_rate": 0.1,
        "learning_rate": 0.1,
        "add_batch_norm": False,
        "num_epochs": 2,
        "activation": "elu",
        "batch_size": 128,
        # every hyperparameter the evidence remedies change, at the script's defaults
        "grad_clip": 0.0,
        "weight_decay": 1e-4,
        "dropout": 0.0,
        "init_scale": 1.0,
        "class_weighting": "none",
        "early_stopping_patience": 0,
        "normalize_inputs": True,
        "num_workers": 0,
    }
    assert set(spec.channels) == {"train", "test"}
    assert [definition["Name"] for definition in spec.metric_definitions][-1] == "test:accuracy"
    assert state.objective == {"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9}
    assert state.policy == "evidence" and state.remedies == {}  # the built-in set is code: the state names it
    assert "ExplodingTensor" in run_remedies(state) and "DeadRelu" in run_remedies(state)
    assert state.next_action == "launch_new" and state.attempts == []


def test_the_samples_keys_set_the_examples_hyperparameters(account_input):
    sample = {
        **account_input,
        "init_warmup_learning_rate": 0.05,
        "learning_rate": 0.2,
        "add_batch_norm": 1,
        "num_epochs": 3,
        "base_job_name": "resnet-exp",
        "policy": "anchor",
    }
    state = initial_state(sample)
    assert state.run_spec.hyperparameters["warmup_learning_rate"] == 0.05
    assert state.run_spec.hyperparameters["learning_rate"] == 0.2
    assert state.run_spec.hyperparameters["add_batch_norm"] is True
    assert state.run_spec.hyperparameters["num_epochs"] == 3
    assert state.run_spec.base_job_name == "resnet-exp"
    assert [remedy.name for remedy in run_remedies(state)["*"]] == [
        "HalveWarmupLearningRate",
        "AddBatchNorm",
        "ScaleLearningRate",
    ]


def test_explicit_defaults_give_the_same_state_as_omitted_ones(account_input):
    explicit = {key: value for key, value in default_execution_input().items() if value is not None}
    assert initial_state({**explicit, **account_input}) == initial_state(account_input)
    assert set(default_execution_input()) | {"bucket", "region", "sm_role"} == set(ExecutionInput.model_fields)


def test_the_examples_other_hyperparameters_go_in_hyperparameters(account_input):
    state = initial_state({**account_input, "hyperparameters": {"depth": 32, "activation": "relu"}})
    assert state.run_spec.hyperparameters["depth"] == 32
    assert state.run_spec.hyperparameters["activation"] == "relu"
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "depth": 32})
    assert "hyperparameter of the built-in example now" in caught.value.problems["depth"]
    assert '{"hyperparameters": {"depth": 32}}' in caught.value.problems["depth"]


def test_a_users_script_with_its_declarations(account_input):
    state = initial_state({**account_input, **SCRIPT})
    assert state.run_spec.entry_point == "train.py" and state.run_spec.source_dir == SCRIPT["source_dir"]
    assert state.run_spec.hyperparameters == SCRIPT["hyperparameters"]
    assert state.run_spec.channels == SCRIPT["channels"]
    assert state.run_spec.metric_definitions == SCRIPT["metric_definitions"]
    assert state.policy == "declared"
    assert state.remedies["ExplodingTensor"][1] == {"hyperparameter": "lr", "multiply_by": 0.5, "min": 1e-5}
    assert state.objective["target_value"] == 0.9
    assert state.run_spec.base_job_name == "remediation-job"
    assert json.loads(json.dumps(state.to_payload())) == state.to_payload()


def test_a_users_script_without_declarations_gets_the_evidence_remedies_its_hyperparameters_allow(account_input):
    minimal = {key: SCRIPT[key] for key in ("source_dir", "entry_point")}
    state = initial_state({**account_input, **minimal})
    assert state.objective is None and state.policy == "evidence"
    assert state.run_spec.hyperparameters == {} and state.run_spec.channels == {}
    # no hyperparameters: nothing of the script's to change, only the debugger's loss settings (with consent)
    assert {key: [remedy.name for remedy in remedies] for key, remedies in run_remedies(state).items()} == {
        "objective_missed": [
            "RobustLossInJob", "WeightClassesInJob", "AdjustLogitsInJob", "RobustLossPastPeak", "RobustLossOnShortMatch"
        ]
    }
    assert all(remedy.changes_the_loss for remedy in run_remedies(state)["objective_missed"])

    named = initial_state(
        {
            **account_input,
            **minimal,
            "hyperparameters": {"lr": 0.1, "epochs": 5, "activation": "relu"},
            "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
        }
    )
    remedies = run_remedies(named)
    assert [remedy.name for remedy in remedies["UnchangedTensor"]] == [
        "LowerRateAfterCollapse", "LearningRateUpIntoRange", "RaiseLearningRate"
    ]
    assert [remedy.name for remedy in remedies["DeadRelu"]] == [
        "LearningRateIntoRange", "LowerRateAfterCollapse", "SwitchToLeakyReLU", "LowerLearningRate", "SwitchToLeakyReLU"
    ]
    # a quiet miss: the epoch at which the held-out metric met the objective, the rate, more epochs for a rare class
    # weighted in the loss or training labels that look wrong while the held-out metric still rose at the end, else
    # smaller steps, then what the loss's course says (epochs when the job was too short to tell, the rate when it
    # never fell, epochs when it was still falling, a lower rate when it settled), then more epochs; the debugger's
    # loss settings where they answer the labels (each allowed only with the user's consent). A run that diverged gets a
    # rate below the one it diverged at first.
    assert [(remedy.name, remedy.change.setting) for remedy in remedies["objective_missed"]] == [
        # a regression's targets far from its outputs' scale: the rate divided by it (SGD assumed, no normalize_targets)
        ("StopAtBestEpoch", "epochs"), ("RateForTargetScale", "lr"), ("LowerRateOnDivergence", "lr"),
        ("LearningRateIntoRange", "lr"),
        ("LearningRateToUsual", "lr"), ("SwitchToReLU", "activation"),
        # a loss that diverged: a tenth of the rate (no grad_clip knob: no clipping), before labels or epochs
        ("LowerRateOnDivergence", "lr"),
        # a rate lowered after a job blew up, at which the network learned nothing: lower still
        ("LowerRateLearnedNothing", "lr"),
        ("TrainLongerOnRareClass", "epochs"), ("RobustLossInJob", "debugger_robust_loss"),
        ("TrainLongerOnNoisyLabels", "epochs"), ("SmallerStepsOnNoisyLabels", "lr"),
        ("TrainLonger", "epochs"),
        ("RaiseLearningRateToUsual", "lr"),
        ("TrainLonger", "epochs"), ("LowerLearningRate", "lr"), ("TrainLonger", "epochs"),
        ("WeightClassesInJob", "debugger_class_weighting"), ("AdjustLogitsInJob", "debugger_class_weighting"),
        ("RobustLossPastPeak", "debugger_robust_loss"), ("RobustLossOnShortMatch", "debugger_robust_loss"),
    ]
    assert "CheckInputImages" not in remedies  # the script has no normalize_inputs


@pytest.mark.parametrize(
    ("names", "fragment"),
    [
        ({"lr": "lr"}, "is not a name the built-in remedies use"),
        ({"learning_rate": "eta"}, "must name one of the run's hyperparameters (known: epochs, lr"),
        ({"learning_rate": "lr", "warmup_learning_rate": "lr"}, "'lr' is named for two conventional names"),
    ],
)
def test_bad_hyperparameter_names_are_refused_naming_the_entry(account_input, names, fragment):
    script = {**{key: SCRIPT[key] for key in ("source_dir", "entry_point")}, "hyperparameters": {"lr": 0.1, "epochs": 5}}
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, **script, "hyperparameter_names": names})
    (field,) = caught.value.problems
    assert field.startswith("hyperparameter_names.") and fragment in caught.value.problems[field]


BAD_SCRIPT_INPUTS = [
    ({"entry_point": "train.py"}, "source_dir", "is required with entry_point"),
    ({"source_dir": SCRIPT["source_dir"]}, "entry_point", "is required with source_dir"),
    ({**SCRIPT, "source_dir": "/home/me/script"}, "source_dir", "s3://bucket/key"),
    ({**SCRIPT, "entry_point": "../train.py"}, "entry_point", "without '..'"),
    ({**SCRIPT, "entry_point": "train.sh"}, "entry_point", "Python file"),
    ({**SCRIPT, "learning_rate": 0.1}, "learning_rate", "AWS sample's keys for the built-in example"),
    ({**SCRIPT, "hyperparameters": {"remediation_entry_point": "x"}}, "hyperparameters.remediation_entry_point", "platform's"),
    ({**SCRIPT, "hyperparameters": {"lr": [0.1]}}, "hyperparameters.lr", "string, number or true/false"),
    ({**SCRIPT, "hyperparameters": {"bad name": 1}}, "hyperparameters.bad name", "--name"),
    ({**SCRIPT, "channels": {"train": "/data"}}, "channels.train", "s3://"),
    (
        {**SCRIPT, "metric_definitions": [{"Name": "acc", "Regex": "acc=[0-9.]+"}]},
        "metric_definitions[0].Regex",
        "capture group",
    ),
    (
        {**SCRIPT, "metric_definitions": [{"Name": "acc", "Regex": "acc=("}]},
        "metric_definitions[0].Regex",
        "regular expression",
    ),
    ({**SCRIPT, "objective": {"metric_name": "acc", "type": "Max", "target_value": 1}}, "objective.type", "Maximize"),
    ({**SCRIPT, "objective": {"metric_name": "acc", "type": "Maximize"}}, "objective.target_value", "is required"),
    ({**SCRIPT, "objective": {"metric_name": "acc", "type": "Maximize", "target_value": "0.9"}}, "objective.target_value", "finite number"),
    ({**SCRIPT, "remedies": {"ExplodingTensr": []}}, "remedies.ExplodingTensr", "is not a built-in rule or failure kind"),
    (
        {**SCRIPT, "remedies": {"ExplodingTensor": [{"hyperparameter": "learning_rate", "multiply_by": 0.5}]}},
        "remedies.ExplodingTensor[0].hyperparameter",
        "'learning_rate' is not in run_spec.hyperparameters (known: epochs, grad_clip, lr, optimizer)",
    ),
    (
        {**SCRIPT, "remedies": {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 0.1, "max": 1e-5}]}},
        "remedies.*[0].min",
        "the wrong way round",
    ),
    (
        {**SCRIPT, "remedies": {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "min": 0.08}]}},
        "remedies.*[0]",
        "can never apply: lr 0.1 -> 0.05 would be below 0.08, and no other remedy changes lr",
    ),
    (
        {**SCRIPT, "remedies": {"*": [{"hyperparameter": "grad_clip", "set_to": 0}]}},
        "remedies.*[0]",
        "can never apply: grad_clip is already 0",
    ),
    (
        {**SCRIPT, "remedies": {"*": [{"hyperparameter": "optimizer", "multiply_by": 2}]}},
        "remedies.*[0].multiply_by",
        "needs a number",
    ),
    (
        {**SCRIPT, "remedies": {"*": [{"hyperparameter": "lr", "set_to": "high"}]}},
        "remedies.*[0].set_to",
        "must be a real number like lr's starting value",
    ),
    (
        {**SCRIPT, "remedies": {"*": [{"hyperparameter": "lr", "multiply_by": 1}]}},
        "remedies.*[0].multiply_by",
        "never changes lr",
    ),
    (
        {**SCRIPT, "remedies": {"*": [{"hyperparameter": "lr", "multiply_by": 0.5, "when": {"phase": "middle"}}]}},
        "remedies.*[0].when.phase",
        "warmup, main",
    ),
    ({**SCRIPT, "policy": "anchor"}, "policy", "brings its own remedies"),
]


@pytest.mark.parametrize(
    ("given", "field", "expected"), BAD_SCRIPT_INPUTS, ids=[f"{field}-{index}" for index, (_, field, _) in enumerate(BAD_SCRIPT_INPUTS)]
)
def test_bad_declarations_fail_before_any_launch_naming_the_field(account_input, given, field, expected):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, **given})
    assert field in caught.value.problems, caught.value.problems
    assert expected in caught.value.problems[field]


BAD_INPUTS = [
    ("init_warmup_learning_rate", -1, "must be > 0 (got -1)"),
    ("init_warmup_learning_rate", 0, "must be > 0 (got 0)"),
    ("learning_rate", 11, "must be <= 10"),
    ("learning_rate", "fast", "must be a number"),
    ("learning_rate", float("nan"), "must be a finite number"),
    ("learning_rate", True, "not a boolean"),
    ("add_batch_norm", 2, "true/false or 1/0 (got 2)"),
    ("add_batch_norm", "maybe", "true/false or 1/0"),
    ("add_batch_norm", "true", "true/false or 1/0"),
    ("bucket", "My_Bucket", "lowercase letters, digits, dots and hyphens"),
    ("bucket", "ab", "3-63 characters"),
    ("bucket", "192.168.10.4", "IP address"),
    ("bucket", "my..bucket", "no '..'"),
    ("bucket", "xn--bucket", "may not start with 'xn--'"),
    ("bucket", "bucket-s3alias", "may not end with '-s3alias'"),
    ("base_job_name", "bad name", "letters, digits and hyphens"),
    ("base_job_name", "a" * 33, "1-32"),
    ("instance_type", "m5.xlarge", "such as ml.m5.xlarge"),
    ("region", "useast1", "region code such as us-east-1"),
    ("sm_role", "SageMakerRole", "IAM role ARN"),
    ("sm_role", "arn:aws:iam::1234:role/x", "IAM role ARN"),
    ("num_epochs", 0, "must be >= 1 (got 0)"),
    ("num_epochs", 1.5, "whole number"),
    ("num_epochs", True, "not a boolean"),
    ("debugger_save_interval", 0, "must be >= 1"),
    ("max_num_retraining", -1, "must be >= 0"),
    ("max_num_retraining", 51, "must be <= 50"),
    ("max_monitor_transitions", 0, "must be >= 1"),
    ("policy", "random", "must be one of 'evidence', 'anchor' or 'declared'"),
    ("policy", "Evidence", "(got 'Evidence') (did you mean 'evidence'?)"),
    ("hyperparamters", {"depth": 20}, "is not a known key (did you mean 'hyperparameters'?); allowed keys: "),
    ("framework_version", "latest", "has no supported SageMaker training image; use one of 2.13, 2.12, 2.11"),
    ("use_spot_instances", "sometimes", "true/false"),
    ("monitor_interval_seconds", -5, "must be >= 1 (got -5)"),
    ("monitor_interval_seconds", 1.5, "whole number"),
    ("max_run_seconds", 10, "must be >= 60"),
    (
        "topic_arn",
        "arn:aws:sns:us-east-1:123456789012:t",
        "is not a known key; allowed keys: add_batch_norm, allow_loss_changes, base_job_name",
    ),
]


@pytest.mark.parametrize(("field", "value", "expected"), BAD_INPUTS, ids=[f"{f}={v!r}"[:40] for f, v, _ in BAD_INPUTS])
def test_bad_execution_input_names_the_field_and_the_fix(account_input, field, value, expected):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, field: value})
    assert list(caught.value.problems) == [field]
    assert expected in caught.value.problems[field]
    assert f"{field}: " in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_every_bad_field_is_reported_at_once_and_required_keys_say_what_to_give():
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({"init_warmup_learning_rate": -1, "debugger_save_interval": 0})
    problems = caught.value.problems
    assert set(problems) == {"init_warmup_learning_rate", "debugger_save_interval", "bucket", "region", "sm_role"}
    assert "is required" in problems["sm_role"] and "arn:aws:iam::" in problems["sm_role"]


def test_spot_instances_cannot_be_local(account_input):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "instance_type": "local", "use_spot_instances": True})
    assert list(caught.value.problems) == ["use_spot_instances"]


def test_spot_interruptions_are_a_local_runs_only_and_are_checked_entry_by_entry(account_input):
    """The local platform's simulation of spot reclaims: refused, naming the field and the fix, for a cloud instance."""
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "spot_interruptions": [{"at_step": 30}]})
    assert list(caught.value.problems) == ["spot_interruptions"]
    assert "set instance_type to local or local_gpu (got ml.m5.xlarge)" in caught.value.problems["spot_interruptions"]
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "instance_type": "local", "spot_interruptions": [{"at_step": 30}, {"at_step": 20}]})
    assert list(caught.value.problems) == ["spot_interruptions[1].at_step"]
    local = {**account_input, "instance_type": "local"}
    assert initial_state(local).run_spec.spot_interruptions == []
    state = initial_state({**local, "spot_interruptions": [{"at_step": 30}, {"after_seconds": 600}]})
    assert state.run_spec.spot_interruptions == [{"at_step": 30}, {"after_seconds": 600}]
    # every job of the run gets them: the planner's next run_spec keeps them
    assert state.run_spec.with_hyperparameters({"add_batch_norm": True}).spot_interruptions == [
        {"at_step": 30}, {"after_seconds": 600}
    ]  # fmt: skip


@pytest.mark.parametrize(("given", "expected"), [(0, False), (1, True), (True, True), (False, False)])
def test_add_batch_norm_accepts_the_samples_0_1_and_booleans(account_input, given, expected):
    assert initial_state({**account_input, "add_batch_norm": given}).run_spec.hyperparameters["add_batch_norm"] is expected


def test_a_sample_key_and_the_same_hyperparameter_may_not_both_be_given(account_input):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, "learning_rate": 0.2, "hyperparameters": {"learning_rate": 0.3}})
    assert "give it once" in caught.value.problems["learning_rate"]


def test_an_explicit_null_objective_means_none_for_the_example(account_input):
    assert initial_state({**account_input, "objective": None}).objective is None


def test_input_that_is_not_an_object_is_refused():
    with pytest.raises(InvalidExecutionInput, match="must be a JSON object"):
        initial_state(["bucket"])  # type: ignore[arg-type]


def test_the_examples_run_spec_file_is_the_default_run_written_out(account_input):
    """examples/resnet/run_spec.json spells out, in the AWS sample's keys, what an input naming no script runs."""
    from pathlib import Path

    spec_file = Path(__file__).resolve().parents[3] / "examples" / "resnet" / "run_spec.json"
    written = initial_state({**account_input, **json.loads(spec_file.read_text())})
    default = initial_state(account_input)
    assert written.run_spec == default.run_spec
    assert (written.policy, written.objective, written.max_num_retraining) == (
        default.policy,
        default.objective,
        default.max_num_retraining,
    )


@pytest.mark.parametrize(
    ("kinds", "field", "expected"),
    [
        ({"width": "real"}, "hyperparameter_kinds.width", "'width' is not in hyperparameters (known: epochs, grad_clip"),
        ({"epochs": "count"}, "hyperparameter_kinds.epochs", "must be one of integer, real, flag, text (got 'count')"),
        ({"optimizer": "real"}, "hyperparameter_kinds.optimizer", 'says real but optimizer\'s starting value is "sgd"'),
        ({"lr": "integer"}, "hyperparameter_kinds.lr", "says integer but lr's starting value is 0.1"),
    ],
)
def test_a_bad_kind_declaration_fails_before_any_launch_naming_it(account_input, kinds, field, expected):
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, **SCRIPT, "hyperparameter_kinds": kinds})
    assert expected in caught.value.problems[field], caught.value.problems


def test_a_declared_kind_decides_how_a_remedy_writes_the_value(account_input):
    """A JSON integer that is no rate is a whole number, unless the run_spec says it is real."""
    spec = {
        **SCRIPT,
        "hyperparameters": {**SCRIPT["hyperparameters"], "clip": 3},
        "remedies": {"ExplodingTensor": [{"hyperparameter": "clip", "multiply_by": 0.5}]},
    }
    whole = initial_state({**account_input, **spec})
    real = initial_state({**account_input, **spec, "hyperparameter_kinds": {"clip": "real"}})
    assert run_remedies(whole)["ExplodingTensor"][0].apply({"clip": 3}) == {"clip": 2}
    assert run_remedies(real)["ExplodingTensor"][0].apply({"clip": 3}) == {"clip": 1.5}
    assert real.hyperparameter_kinds == {"clip": "real"}


def test_numbers_written_as_text_are_numbers_where_the_hyperparameter_is_one(account_input):
    """boto3's CreateTrainingJob wants every hyperparameter as text, so run_specs carry "lr": "0.002"; the evidence
    set used to refuse that rate ("must be text like lr's starting value"), even with hyperparameter_kinds lr: real."""
    plain = {key: value for key, value in SCRIPT.items() if key != "remedies"}
    spec = {
        **plain,
        "hyperparameters": {"lr": "0.002", "epochs": "12", "optimizer": "sgd", "width": "64"},
        "hyperparameter_names": {"learning_rate": "lr", "num_epochs": "epochs"},
    }
    state = initial_state({**account_input, **spec})
    # the rate and the mapped epochs are numbers; an unmapped "64" that nothing says is a number stays text
    assert state.run_spec.hyperparameters == {"lr": 0.002, "epochs": 12, "optimizer": "sgd", "width": "64"}
    declared = initial_state({**account_input, **spec, "hyperparameter_kinds": {"lr": "real", "width": "integer"}})
    assert declared.run_spec.hyperparameters["width"] == 64
    with pytest.raises(InvalidExecutionInput) as caught:
        initial_state({**account_input, **spec, "hyperparameter_kinds": {"width": "integer"},
                       "hyperparameters": {**spec["hyperparameters"], "width": "64.5"}})  # fmt: skip
    assert "says integer but width's starting value is \"64.5\"" in caught.value.problems["hyperparameter_kinds.width"]


def value_mapped(account_input, names):
    minimal = {key: SCRIPT[key] for key in ("source_dir", "entry_point")}
    return initial_state({
        **account_input, **minimal, "hyperparameters": {"lr": 0.1, "norm": "none", "act": "tanh", "epochs": 12},
        "hyperparameter_names": names,
    })  # fmt: skip


def test_a_knob_whose_values_the_script_spells_its_own_way_keeps_its_remedies(account_input):
    """--norm none|batch|layer: batch norm on is "batch", so the evidence set still adds batch norm, in the script's
    word; an activation map names the choices the script accepts, and a remedy to another one is left out."""
    state = value_mapped(account_input, {
        "learning_rate": "lr", "num_epochs": "epochs",
        "add_batch_norm": {"name": "norm", "values": {"true": "batch", "false": "none"}},
        "activation": {"name": "act", "values": {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh"}},
    })  # fmt: skip
    assert state.hyperparameter_values["add_batch_norm"] == {"true": "batch", "false": "none"}
    assert state.kinds()["norm"] == "text"  # the script's words, not a flag
    remedies = run_remedies(state)
    add = next(remedy for remedy in remedies["ExplodingTensor"] if remedy.name == "AddBatchNorm")
    assert (add.change.setting, add.change.operand) == ("norm", "batch")
    assert "SwitchToLeakyReLU" not in {remedy.name for remedy in remedies["DeadRelu"]}  # no leaky_relu in its choices
    assert {remedy.name for remedy in remedies["VanishingGradient"]} >= {"SwitchToReLU", "AddBatchNorm"}


@pytest.mark.parametrize(
    ("names", "field", "problem"),
    [
        ({"learning_rate": {"name": "lr", "values": {"0.1": 0.2}}}, "hyperparameter_names.learning_rate.values",
         "maps the values of a flag or a word; learning_rate is a real number"),
        ({"add_batch_norm": {"name": "norm", "values": {"yes": "batch"}}}, "hyperparameter_names.add_batch_norm.values.yes",
         'add_batch_norm is true or false: map "true" and "false"'),
        ({"add_batch_norm": {"name": "norm", "values": {"true": 1}}}, "hyperparameter_names.add_batch_norm.values.true",
         'must be a value like the script\'s starting one ("none"; got 1)'),
        ({"add_batch_norm": {"names": "norm"}}, "hyperparameter_names.add_batch_norm",
         'must be your script\'s name, or {"name": ..., "values": {conventional value: yours}} (got keys [\'names\'])'),
    ],
)
def test_a_bad_value_map_is_refused_naming_the_field(account_input, names, field, problem):
    with pytest.raises(InvalidExecutionInput) as refused:
        value_mapped(account_input, names)
    assert refused.value.problems == {field: problem}


KNOWN_EXAMPLE_HYPERPARAMETERS = (
    "activation, add_batch_norm, batch_size, class_weighting, dropout, early_stopping_patience, grad_clip, init_scale, "
    "learning_rate, normalize_inputs, num_epochs, num_workers, warmup_learning_rate, weight_decay"
)


def test_fixed_hyperparameters_are_kept_once_each_in_the_state(account_input):
    state = initial_state({**account_input, "fixed_hyperparameters": ["learning_rate", "batch_size", "learning_rate"]})
    assert state.fixed_hyperparameters == ["learning_rate", "batch_size"]
    assert initial_state(account_input).fixed_hyperparameters == []


@pytest.mark.parametrize(
    ("fixed", "message"),
    [
        (["learning_rate", "lr"], "invalid execution input: fixed_hyperparameters[1]: 'lr' is not in hyperparameters "
                                  f"(known: {KNOWN_EXAMPLE_HYPERPARAMETERS})"),
        (["learning_rat"], "invalid execution input: fixed_hyperparameters[0]: 'learning_rat' is not in hyperparameters "
                           f"(did you mean 'learning_rate'?) (known: {KNOWN_EXAMPLE_HYPERPARAMETERS})"),
        ("lr", "invalid execution input: fixed_hyperparameters: must be a JSON list (got 'lr')"),
    ],
)
def test_a_fixed_hyperparameter_the_run_does_not_have_is_refused_naming_the_entry(account_input, fixed, message):
    with pytest.raises(InvalidExecutionInput) as refused:
        initial_state({**account_input, "fixed_hyperparameters": fixed})
    assert str(refused.value) == message
