"""smdebug's API surface over the debugger: names, defaults, documented examples, errors that name the fix."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from smdebug_job_source import job_environment
from torch import nn

import smdebug
import smdebug.pytorch as smd
from contracts import ContractError
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS, normalize_container_hook_config, validate_hook_config
from smdebug.analysis.utils import no_refresh
from smdebug.core.modes import ModeKeys
from smdebug.core.tensor import StepState
from smdebug.exceptions import (
    InvalidCollectionConfiguration,
    NoMoreData,
    RuleEvaluationConditionMet,
    SMDebugRuntimeError,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.trials import create_trial


def saved_steps(config, mode=ModeKeys.GLOBAL, upto=1001) -> list[int]:
    return [step for step in range(upto) if config.should_save_step(mode, step)]


def test_save_config_documented_examples():
    assert saved_steps(smd.SaveConfig()) == [0, 500, 1000]
    assert saved_steps(smd.SaveConfig(save_interval=1), upto=4) == [0, 1, 2, 3]
    assert saved_steps(smd.SaveConfig(save_interval=100, end_step=200)) == [0, 100]
    assert saved_steps(smd.SaveConfig(save_interval=100, end_step=201)) == [0, 100, 200]
    assert saved_steps(smd.SaveConfig(save_interval=100, start_step=150), upto=401) == [200, 300, 400]
    assert saved_steps(smd.SaveConfig(save_steps=[3, 7])) == [0, 3, 7, 500, 1000]  # a union with the interval
    per_mode = smd.SaveConfig(
        mode_save_configs={smd.modes.TRAIN: smd.SaveConfigMode(save_interval=2), smd.modes.EVAL: smd.SaveConfigMode(save_interval=3)}
    )
    assert saved_steps(per_mode, smd.modes.TRAIN, 7) == [0, 2, 4, 6] and saved_steps(per_mode, smd.modes.EVAL, 7) == [0, 3, 6]
    assert saved_steps(per_mode, smd.modes.PREDICT, 501) == [0, 500]  # a mode left out: the defaults
    disabled = smd.SaveConfig(save_interval=1)
    disabled.end_step = 0  # docs/api.md: how to stop saving a collection
    assert saved_steps(disabled, upto=10) == []


def test_reduction_config_and_its_errors():
    config = smd.ReductionConfig(reductions=["min", "max", "mean"], norms=["l1"])
    assert config.reduction_list() == [("min", False), ("max", False), ("mean", False), ("l1", False)]
    assert not config.saves_raw and smd.ReductionConfig().saves_raw
    with pytest.raises(ContractError, match="reductions: 'average' is not allowed; choose from min"):
        smd.ReductionConfig(reductions=["average"])
    with pytest.raises(ContractError, match="save_raw_tensor: must be True or False"):
        smd.ReductionConfig(save_raw_tensor="yes")


def test_container_hook_file_is_normalised_and_the_api_shape_stays_strict():
    written = {
        "S3Path": "s3://bucket/prefix",
        "LocalPath": "/tmp/x",
        "HookParameters": {"save_interval": 100, "save_all": False, "start_step": "1"},
        "CollectionConfigurations": [{"CollectionName": "weights", "CollectionParameters": None}, {"CollectionName": "losses"}],
    }
    normalized = normalize_container_hook_config(written)
    assert normalized["S3OutputPath"] == "s3://bucket/prefix" and "S3Path" not in normalized
    assert normalized["HookParameters"] == {"save_interval": "100", "save_all": "false", "start_step": "1"}
    assert normalized["CollectionConfigurations"][0]["CollectionParameters"] == {}
    with pytest.raises(ContractError) as both:
        normalize_container_hook_config({"S3Path": "s3://a/b", "S3OutputPath": "s3://a/b"})
    assert both.value.field == "debugger_hook_config.S3Path"
    with pytest.raises(ContractError) as listed:
        normalize_container_hook_config({"HookParameters": {"save_steps": [1, 2]}})
    assert listed.value.field == "debugger_hook_config.HookParameters.save_steps"
    with pytest.raises(ContractError, match="must be a string"):
        validate_hook_config({"HookParameters": {"save_interval": 100}})  # the workflow's shape: strings


def test_builtin_rule_defaults_are_the_documented_ones():
    assert BUILTIN_RULE_DEFAULTS["LossNotDecreasing"] == {
        "collection_names": "",
        "tensor_regex": "",
        "use_losses_collection": "True",
        "num_steps": "10",
        "diff_percent": "0.0",
        "increase_threshold_percent": "5",
        "mode": "",
    }
    assert BUILTIN_RULE_DEFAULTS["WeightUpdateRatio"] == {
        "num_steps": "None",
        "large_threshold": "10.0",
        "small_threshold": "0.00000001",
        "epsilon": "0.000000001",
    }
    assert BUILTIN_RULE_DEFAULTS["PoorWeightInitialization"]["activation_inputs_regex"] == ".*relu_input"
    assert BUILTIN_RULE_DEFAULTS["VanishingGradient"] == {"threshold": "0.0000001"}


def train(hook, steps=4):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    criterion = nn.CrossEntropyLoss()
    hook.register_module(net)
    hook.register_loss(criterion)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        criterion(net(torch.randn(5, 3)), torch.randint(0, 2, (5,))).backward()
        optimizer.step()
    hook.close()


def test_hook_constructor_errors_name_the_fix(tmp_path):
    with pytest.raises(RuntimeError, match="out_dir is a required argument"):
        smd.Hook()
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1))
    train(hook)
    with pytest.raises(SMDebugRuntimeError) as refused:
        smd.Hook(out_dir=str(tmp_path / "run"))
    assert str(refused.value) == (
        f"The path {tmp_path / 'run'} already holds a run that ended; give the hook an out_dir that does not exist yet"
    )
    hook = smd.Hook(out_dir=str(tmp_path / "custom"), include_collections=["mine"])
    with pytest.raises(InvalidCollectionConfiguration, match="Collection mine has not been configured"):
        train(hook)


def test_get_hook_returns_the_last_hook_or_one_from_the_json_file(tmp_path, monkeypatch):
    smd.del_hook()
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "missing.json"))
    assert smd.get_hook(create_if_not_exists=True) is None  # outside SageMaker: no configuration file
    config = tmp_path / "debughookconfig.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "from-json"), "HookParameters": {"save_interval": 2}}))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(config))
    hook = smd.get_hook(create_if_not_exists=True)
    assert isinstance(hook, smd.Hook) and hook.out_dir == tmp_path / "from-json" and smd.get_hook() is hook
    assert hook.include_collections == ["losses"]  # smdebug's PyTorch default
    mine = smd.Hook(out_dir=str(tmp_path / "mine"))
    assert smd.get_hook() is mine
    train(mine)
    hook.close()


def test_default_collections_and_names_follow_smdebug(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=2), include_collections=["weights", "biases", "gradients"])
    assert {"all", "default", "weights", "biases", "gradients", "losses"} <= set(hook.get_collections())
    assert hook.get_collection("weights").include_regex == ["^(?!gradient).*weight"]
    train(hook)
    trial = create_trial(str(tmp_path / "run"))
    assert trial.tensor_names() == [
        "CrossEntropyLoss_output_0",
        "Sequential_0.bias",
        "Sequential_0.weight",
        "Sequential_2.bias",
        "Sequential_2.weight",
        "gradient/Sequential_0.bias",
        "gradient/Sequential_0.weight",
        "gradient/Sequential_2.bias",
        "gradient/Sequential_2.weight",
    ]
    # regex as a plain string (it crashed before), a list, or a collection object
    assert trial.tensor_names(regex="Sequential_0") == ["Sequential_0.bias", "Sequential_0.weight", "gradient/Sequential_0.bias", "gradient/Sequential_0.weight"]
    assert trial.tensor_names(regex=["^Sequential_2", "Loss"]) == ["CrossEntropyLoss_output_0", "Sequential_2.bias", "Sequential_2.weight"]
    assert trial.tensor_names(collection=trial.collection("biases")) == ["Sequential_0.bias", "Sequential_2.bias"]
    assert trial.tensor_names(step=2, regex="weight$") == ["Sequential_0.weight", "Sequential_2.weight", "gradient/Sequential_0.weight", "gradient/Sequential_2.weight"]
    with pytest.raises(ValueError, match="Only one of `regex` or `collection`"):
        trial.tensor_names(regex="x", collection="weights")
    with pytest.raises(TensorUnavailable, match="Tensor nope was not saved"):
        trial.tensor("nope")
    with pytest.raises(TensorUnavailableForStep, match="not available for step 1 with mode GLOBAL"):
        trial.tensor("Sequential_0.weight").value(1)


def test_step_states_and_waiting_on_a_finished_run(tmp_path):
    train(smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_steps=[1, 3])))
    trial = create_trial(str(tmp_path / "run"))
    assert trial.steps() == [0, 1, 3]
    assert trial.has_passed_step(1) is StepState.AVAILABLE
    assert trial.has_passed_step(2) is StepState.UNAVAILABLE  # a later step was saved without it
    assert trial.has_passed_step(9) is StepState.UNAVAILABLE  # the run has ended
    assert [state.value for state in StepState] == [0, 1, 2]
    trial.wait_for_steps([0, 3])
    with pytest.raises(StepUnavailable, match="Step 2 of mode GLOBAL is not available"):
        trial.wait_for_steps([2])
    with pytest.raises(NoMoreData, match="Max step available is 3"):
        trial.wait_for_steps([4])
    with no_refresh(trial):
        assert not trial.dynamic_refresh
    assert trial.dynamic_refresh
    message = str(RuleEvaluationConditionMet("MyRule", 12))
    assert message == "Evaluation of the rule MyRule at step 12 resulted in the condition being met"


def test_modes_are_one_enum_everywhere(tmp_path):
    assert smd.modes is smdebug.modes is ModeKeys and smd.modes.TRAIN.value == 1 and smd.modes.GLOBAL.value == 4
    with pytest.raises(ValueError, match="set_mode: 'training' is not a mode"):
        # its own out_dir: a shared one holds the end marker an earlier run's hook left at exit, which smdebug refuses
        smd.Hook(out_dir=str(tmp_path / "run")).set_mode("training")


FAKE_REAL_SMDEBUG = '__version__ = "1.0.34"\n'


@pytest.mark.parametrize("order", ["source_first", "real_first"])
def test_which_smdebug_is_imported_when_both_are_on_the_path(tmp_path, order):
    """In a job the packed copy sits in the script's directory, first on sys.path; elsewhere the first
    sys.path entry holding an smdebug package wins, and REMEDIATION_DEBUGGER tells them apart."""
    from smdebug_job_source import REPO

    real = tmp_path / "site" / "smdebug"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text(FAKE_REAL_SMDEBUG)
    paths = [str(REPO), str(tmp_path / "site")] if order == "source_first" else [str(tmp_path / "site"), str(REPO)]
    env = job_environment()
    env["PYTHONPATH"] = ":".join([*paths, env["PYTHONPATH"]])
    probe = "import smdebug; print(getattr(smdebug, 'REMEDIATION_DEBUGGER', False), smdebug.__version__)"
    result = subprocess.run([sys.executable, "-S", "-c", probe], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expected = "True 1.0.34+remediation.debugger" if order == "source_first" else "False 1.0.34"
    assert result.stdout.strip() == expected


def test_an_unreadable_step_file_raises_index_reader_exception(tmp_path):
    from smdebug.exceptions import IndexReaderException

    train(smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1)))
    (tmp_path / "run" / "steps" / "000000000007.npz").write_bytes(b"not a zip file")
    with pytest.raises(IndexReaderException, match="000000000007.npz .* is unreadable"):
        create_trial(str(tmp_path / "run"))


SEEN_NAMES_RULE = """
from smdebug.rules.rule import Rule

SEEN = {}


class SeenNames(Rule):
    def __init__(self, base_trial):
        super().__init__(base_trial)

    def invoke_at_step(self, step):
        SEEN[step] = sorted(self.base_trial.tensor_names(step=step))
        return False
"""


def test_a_custom_rule_in_the_job_sees_what_smdebug_would_have_saved(tmp_path, monkeypatch):
    """The hook's every-step signals (loss, total gradient norm) stay out of an smdebug rule's trial."""
    import sys

    source = tmp_path / "seen_rules.py"
    source.write_text(SEEN_NAMES_RULE)
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"RuleConfigurationName": "Seen", "RuleParameters": {"rule_to_invoke": "SeenNames", "custom_rule_source": str(source)}}]))
    monkeypatch.setenv("DEBUGGER_RULE_CONFIG_FILE_PATH", str(rules))
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=2), include_collections=["gradients"])
    train(hook, steps=4)
    seen = next(module.SEEN for name, module in sys.modules.items() if name.startswith("debugger_custom_rule_") and hasattr(module, "SEEN"))
    gradients = ["gradient/Sequential_0.bias", "gradient/Sequential_0.weight", "gradient/Sequential_2.bias", "gradient/Sequential_2.weight"]
    assert seen[0] == ["CrossEntropyLoss_output_0", *gradients] and seen[2] == seen[0]
    assert seen[1] == [] and seen[3] == []  # not saved there: nothing, not even the loss the hook measured
