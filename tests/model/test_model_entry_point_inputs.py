"""The entry point's inputs: where hyperparameters come from, and bad input ending the job with exit code 2."""

import json
import os
from pathlib import Path

import pytest

from model.hyperparameters import TrainingHyperparameters
from model.job_inputs import BadInput, channel_directory, create_hook, read_hyperparameters
from model.train import EXIT_BAD_INPUT, main


def test_argv_wins_over_sm_hps_and_the_json_file(tmp_path):
    (tmp_path / "hyperparameters.json").write_text(json.dumps({"learning_rate": "0.3"}))
    environ = {"SM_HPS": json.dumps({"learning_rate": 0.2}), "SM_INPUT_CONFIG_DIR": str(tmp_path)}
    assert read_hyperparameters(["--learning_rate", "0.05", "--add_batch_norm", "true"], environ) == (
        TrainingHyperparameters(learning_rate=0.05, add_batch_norm=True)
    )


def test_sm_hps_wins_over_the_json_file_and_keeps_json_types(tmp_path):
    (tmp_path / "hyperparameters.json").write_text(json.dumps({"learning_rate": "0.3"}))
    environ = {
        "SM_HPS": json.dumps({"learning_rate": 0.2, "num_epochs": 3, "add_batch_norm": True}),
        "SM_INPUT_CONFIG_DIR": str(tmp_path),
    }
    parsed = read_hyperparameters([], environ)
    assert (parsed.learning_rate, parsed.num_epochs, parsed.add_batch_norm) == (0.2, 3, True)


def test_json_file_as_sagemaker_writes_it(tmp_path):
    # SageMaker's hyperparameters.json holds strings, sometimes JSON-encoded a second time.
    (tmp_path / "hyperparameters.json").write_text(
        json.dumps({"warmup_learning_rate": json.dumps("0.0125"), "depth": "32", "sagemaker_program": '"train.py"'})
    )
    parsed = read_hyperparameters([], {"SM_INPUT_CONFIG_DIR": str(tmp_path)})
    assert (parsed.warmup_learning_rate, parsed.depth) == (0.0125, 32)


def test_no_source_means_the_defaults(tmp_path):
    assert read_hyperparameters([], {"SM_INPUT_CONFIG_DIR": str(tmp_path / "absent")}) == TrainingHyperparameters()


@pytest.mark.parametrize("environ_key", ["SM_HPS", "file"])
def test_malformed_json_sources_name_their_origin(tmp_path, environ_key):
    environ = {"SM_INPUT_CONFIG_DIR": str(tmp_path)}
    if environ_key == "SM_HPS":
        environ["SM_HPS"] = "{not json"
    else:
        (tmp_path / "hyperparameters.json").write_text("[1, 2]")
    with pytest.raises(BadInput) as caught:
        read_hyperparameters([], environ)
    assert ("SM_HPS" if environ_key == "SM_HPS" else "hyperparameters.json") in str(caught.value)


def test_the_hook_comes_from_the_debugger_config_file_as_for_any_script(tmp_path, monkeypatch):
    config = tmp_path / "debughookconfig.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "from-config"), "HookParameters": {"save_interval": "5"}}))
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([VALID_RULE]))
    monkeypatch.setenv("DEBUGGER_RULE_CONFIG_FILE_PATH", str(rules))
    monkeypatch.delenv("DEBUG_OUTPUT_DIR", raising=False)
    hook, source = create_hook({"SMDEBUG_CONFIG_FILE_PATH": str(config)})
    try:
        assert source == f"hook configuration {config}"
        assert hook.out_dir == tmp_path / "from-config" and hook.rule_names == ["ExplodingTensor"]
    finally:
        hook.close()


def test_without_a_config_file_the_hook_runs_exploding_tensor_with_stop_training(tmp_path):
    hook, source = create_hook({"DEBUG_OUTPUT_DIR": str(tmp_path / "debug")})
    try:
        assert "ExplodingTensor with action StopTraining" in source
        assert hook.rule_names == ["ExplodingTensor"] and hook.out_dir == tmp_path / "debug"
    finally:
        hook.close()


VALID_RULE = {"RuleConfigurationName": "ExplodingTensor", "RuleParameters": {"rule_to_invoke": "ExplodingTensor"}}


@pytest.mark.parametrize(
    ("argv", "env_change", "expected"),
    [
        (
            ["--warmup_lr", "0.1"],
            {},
            "InvalidHyperparameter: hyperparameter 'warmup_lr': is not a known hyperparameter; allowed: ",
        ),
        (
            ["--learning_rate", "fast"],
            {},
            "InvalidHyperparameter: hyperparameter 'learning_rate': must be a number; got 'fast'",
        ),
        (["--depth", "21"], {}, "hyperparameter 'depth': must be 6n+2"),
        (["--add_batch_norm", "maybe"], {}, "hyperparameter 'add_batch_norm': must be true or false"),
        (["learning_rate=0.1"], {}, "expected --name value arguments"),
        (
            [],
            {"SM_CHANNEL_TEST": "{root}/no-such-channel"},
            "MissingChannel: channel 'test' (env SM_CHANNEL_TEST): channel directory",
        ),
        ([], {"SM_CHANNEL_TRAIN": "{root}/empty-channel"}, "InvalidChannel: channel 'train' (env SM_CHANNEL_TRAIN): "),
        (
            [],
            {"SMDEBUG_CONFIG_FILE_PATH": "{root}/hook.json", "hook.json": {"LocalPath": "/tmp/d", "SaveInterval": "5"}},
            "InvalidDebuggerConfiguration: debugger_hook_config.SaveInterval: is not allowed; allowed keys: ",
        ),
        (
            [],
            {
                "SMDEBUG_CONFIG_FILE_PATH": "{root}/hook.json",
                "hook.json": {},
                "DEBUGGER_RULE_CONFIG_FILE_PATH": "{root}/rules.json",
                "rules.json": [{"RuleConfigurationName": "Boom", "RuleParameters": {"rule_to_invoke": "Boom"}}],
            },
            "InvalidDebuggerConfiguration: debugger_rule_configs[0].RuleParameters.rule_to_invoke: 'Boom' is not a built-in rule",
        ),
        (
            [],
            {
                "SMDEBUG_CONFIG_FILE_PATH": "{root}/hook.json",
                "hook.json": {},
                "DEBUGGER_RULE_CONFIG_FILE_PATH": "{root}/rules.json",
                "rules.json": [
                    {
                        **VALID_RULE,
                        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": '[{"name":"Reboot"}]'},
                    }
                ],
            },
            "debugger_rule_configs[0].RuleParameters.action_json[0].name: must be one of StopTraining, Email, SMS",
        ),
        (
            [],
            {"SMDEBUG_CONFIG_FILE_PATH": "{root}/hook.json", "hook.json": "{not json"},
            "InvalidDebuggerConfiguration: ",
        ),
        (
            [],
            {"TRAINING_NUM_THREADS": "two"},
            "InvalidEnvironment: env TRAINING_NUM_THREADS must be a whole number >= 1",
        ),
    ],
)
def test_bad_input_ends_the_job_with_exit_2_and_a_failure_text_naming_the_field(
    small_channels, job_dirs, monkeypatch, capsys, argv, env_change, expected
):
    (job_dirs.root / "empty-channel").mkdir()
    environment = job_dirs.environment(small_channels)
    for key, value in env_change.items():
        if key.endswith(".json"):  # a file the variable points at
            text = value if isinstance(value, str) else json.dumps(value)
            (job_dirs.root / key).write_text(text)
        else:
            environment[key] = value.format(root=job_dirs.root)
    for key in [key for key in os.environ if key.startswith(("SM_", "TRAINING_", "DEBUG_", "SMDEBUG_"))]:
        monkeypatch.delenv(key)
    for key, value in environment.items():
        monkeypatch.setenv(key, value)

    assert main(argv) == EXIT_BAD_INPUT
    failure = job_dirs.failure.read_text()
    assert expected in failure
    assert "training ResNet" not in capsys.readouterr().out  # ended before the model was built
    assert not job_dirs.model.exists() and not job_dirs.checkpoints.exists()


@pytest.mark.process
def test_bad_input_through_the_json_file_in_a_real_process(small_channels, job_dirs, run_training_job):
    (job_dirs.root / "config").mkdir()
    (job_dirs.root / "config" / "hyperparameters.json").write_text(json.dumps({"num_epochs": "two"}))
    job = run_training_job([], job_dirs.environment(small_channels), cwd=job_dirs.root, timeout=300)
    assert job.exit_code == EXIT_BAD_INPUT
    assert (
        job_dirs.failure.read_text()
        == "InvalidHyperparameter: hyperparameter 'num_epochs': must be a whole number; got 'two'"
    )
    assert job.steps == []


def test_channel_directories_follow_sagemaker_env_then_its_input_layout():
    assert channel_directory("train", {"SM_CHANNEL_TRAIN": "/data/tr", "SM_INPUT_DIR": "/in"}) == Path("/data/tr")
    assert channel_directory("test", {"SM_INPUT_DIR": "/in"}) == Path("/in/data/test")
    assert channel_directory("test", {}) == Path("/opt/ml/input/data/test")
