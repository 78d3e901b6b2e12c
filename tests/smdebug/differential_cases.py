"""The differential harness's cases: each runs scripts of tests/smdebug_corpus (written from smdebug's documentation
and AWS's examples, unchanged) and says what the reader probes besides the generic description of the trial.

A run's arguments and environment may name ``{out_dir}`` (where the case's tensors go: a directory that does not exist
yet, or the S3 URI of an S3 case) and ``{config_dir}`` (where the case's configuration files are written:
``debughookconfig.json`` from ``hook_config`` with its LocalPath set to the out_dir, ``rules.json`` from
``rule_configs``) and, in a case with ``checkpoints``, ``{checkpoint_dir}`` (the LocalPath of its
``checkpointconfig.json``). A case whose hook comes from the JSON file gets SMDEBUG_CONFIG_FILE_PATH pointing at it.

``differences`` names the documented differences (tests/smdebug/differential_differences.py) the case shows; the
harness fails on any other difference, and on a documented one the case no longer shows.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Run:
    script: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    #: An analysis script's report: the last JSON line it prints is compared.
    capture: bool = False
    #: In a live case: runs while the first script (the training) runs.
    during: bool = False
    #: Files removed before the run: what a reclaimed spot instance's local disk held that its restart on a new
    #: instance does not find (smdebug's claim.smd, which the killed process never removed: on the same disk real
    #: smdebug would take the restarted process for a second worker and write nothing).
    lost_with_instance: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    folder: str
    runs: tuple[Run, ...]
    #: What the case exercises and where the script's pattern comes from.
    what: str
    #: "batch" (scripts one after the other, then the reader), "live" (the reader follows the training) or "s3".
    kind: str = "batch"
    hook_config: dict[str, Any] | None = None
    rule_configs: list[dict[str, Any]] | None = None
    #: What the reader asks besides the generic description: "regex" (patterns for tensor_names(regex=)), "rule" (a
    #: custom rule for invoke_rule), "follow" (live reading), "create_trial" (its keyword arguments),
    #: "has_passed_step" (steps to ask about).
    probe: dict[str, Any] = dataclasses.field(default_factory=dict)
    trial_path: str = "{out_dir}"
    #: Paths of the compared documents that depend on timing, not on the implementation (fnmatch patterns).
    not_compared: tuple[str, ...] = ()
    #: The documented differences this case shows (ids in differential_differences.DIFFERENCES).
    differences: tuple[str, ...] = ()
    #: A job with a CheckpointConfig: ``{config_dir}/checkpointconfig.json`` names ``{checkpoint_dir}`` (its LocalPath)
    #: and env CHECKPOINT_CONFIG_FILE_PATH points at it, as SageMaker writes it for managed spot training.
    checkpoints: bool = False


#: /opt/ml/input/config/debughookconfig.json as SageMaker writes it for a PyTorch job configured with
#: DebuggerHookConfig(hook_parameters=..., collection_configs=[...]): numbers and booleans besides strings, mode-prefixed
#: keys, a collection of the user's own, reductions in the file's spelling (l2_norm).
SAGEMAKER_HOOK_FILE = {
    "S3Path": "s3://example-bucket/job/debug-output",
    "HookParameters": {"save_all": False, "train.save_interval": 4, "eval.save_interval": "2", "include_regex": "fc2_output"},
    "CollectionConfigurations": [
        {"CollectionName": "weights"},
        {
            "CollectionName": "gradients",
            "CollectionParameters": {"save_steps": "1, 2", "reductions": "max,abs_mean,l2_norm", "save_raw_tensor": True},
        },
        {"CollectionName": "losses", "CollectionParameters": {"save_interval": 1}},
        {"CollectionName": "ReluActivation", "CollectionParameters": {"include_regex": "relu*", "eval.save_interval": 1}},
    ],
}

XGBOOST_HOOK_FILE = {
    "HookParameters": {"save_interval": "2"},
    "CollectionConfigurations": [
        {"CollectionName": "metrics"},
        {"CollectionName": "feature_importance", "CollectionParameters": {"save_interval": "3"}},
        {"CollectionName": "average_shap"},
    ],
}

OUT = "{out_dir}"
CONFIG = "{config_dir}/debughookconfig.json"

CASES: tuple[Case, ...] = (
    Case(
        "hook_from_json",
        "hook_from_json",
        (Run("train.py"),),
        "smd.Hook.create_from_json_file() on the file SageMaker writes (AWS's pytorch_model_debugging): per-mode keys, "
        "save_steps, reductions with save_raw_tensor, a collection of the user's own, include_regex",
        hook_config=SAGEMAKER_HOOK_FILE,
        probe={"regex": ["relu", "fc2"]},
    ),
    Case(
        "hook_from_json_defaults",
        "hook_from_json",
        (Run("train.py", ("--epochs", "1")),),
        "the file SageMaker writes when DebuggerHookConfig names nothing but its S3 path: the hook's defaults",
        hook_config={"S3Path": "s3://example-bucket/job/debug-output", "HookParameters": {}},
    ),
    Case(
        "hook_from_json_save_all",
        "hook_from_json",
        (Run("train.py", ("--epochs", "1")),),
        "HookParameters save_all and save_interval as SageMaker writes them (strings)",
        hook_config={"HookParameters": {"save_all": "true", "save_interval": "3"}},
    ),
    Case(
        "hook_from_json_ranges",
        "hook_from_json",
        (Run("train.py", ("--epochs", "2", "--train-steps", "6", "--eval-steps", "3")),),
        "start_step/end_step per mode, reductions on a built-in collection, save_histogram, in the file's spelling",
        hook_config={
            "HookParameters": {"save_interval": "2", "train.start_step": "2", "train.end_step": "9", "eval.save_steps": "0,2"},
            "CollectionConfigurations": [
                {"CollectionName": "weights", "CollectionParameters": {"reductions": "abs_l1_norm,mean,l2_norm"}},
                {"CollectionName": "biases", "CollectionParameters": {"save_histogram": "false", "save_interval": "5"}},
                {"CollectionName": "losses"},
            ],
        },
    ),
    Case(
        "hook_in_code_reductions",
        "hook_in_code_reductions",
        (Run("train.py", ("--out_dir", OUT)),),
        "smd.Hook(...) with SaveConfig, ReductionConfig and include_collections (docs/api.md, docs/pytorch.md): reductions "
        "instead of tensors; the biases collection keeps the tensor too",
    ),
    Case(
        "modes_custom_collections",
        "modes_custom_collections",
        (Run("train.py", ("--out_dir", OUT)),),
        "set_mode with per-mode SaveConfigMode, a functional loss (record_tensor_value), a custom collection with its own "
        "save_config, save_scalar and save_tensor (docs/api.md, docs/pytorch.md)",
        differences=("D3",),
    ),
    Case(
        "save_all",
        "save_all_module_tensors",
        (Run("train.py", ("--smdebug_path", OUT, "--hook-type", "saveall")),),
        "save_all=True with save_steps (smdebug's examples/pytorch/scripts/simple.py); no hook.close(): the process's "
        "exit closes it",
        probe={"regex": ["relu", "_input_0$", "fc\\d"]},
    ),
    Case(
        "module_input_output",
        "save_all_module_tensors",
        (Run("train.py", ("--smdebug_path", OUT, "--hook-type", "module-input-output")),),
        "Collection.add_module_tensors(module, inputs=True, outputs=True) (simple.py's module-input-output)",
    ),
    Case(
        "frozen_transfer_learning",
        "frozen_transfer_learning",
        (Run("train.py", ("--out_dir", OUT)),),
        "a pretrained feature extractor frozen (requires_grad False) under a trained head: which weights and gradients "
        "are saved",
    ),
    Case(
        "per_mode_save_configs",
        "per_mode_save_configs",
        (Run("train.py", ("--out_dir", OUT)),),
        "save_config as a dict of modes (TRAIN every 4, EVAL every 2, PREDICT at steps 1 and 3; docs/api.md)",
    ),
    Case(
        "include_regex",
        "include_regex",
        (Run("train.py", ("--out_dir", OUT)),),
        "the hook's include_regex: the default collection, with the losses saved by default",
        probe={"regex": ["relu", "^fc", "weight$", "output_0$"]},
    ),
    Case(
        "reductions_norms",
        "reductions_norms",
        (Run("train.py", ("--out_dir", OUT)),),
        "every reduction and norm, plain and absolute, saved instead of the tensors (docs/api.md ReductionConfig); "
        "a one-element bias",
    ),
    Case(
        "reductions_save_shape",
        "reductions_save_shape",
        (Run("train.py", ("--out_dir", OUT)),),
        "save_shape: shapes and norms of the gradients without the gradients",
        differences=("D6",),
    ),
    Case(
        "save_scalar_tensor",
        "save_scalar_tensor",
        (Run("train.py", ("--out_dir", OUT)),),
        "save_scalar every step and per epoch (sm_metric), save_tensor into the default collection before and after "
        "the forward pass (docs/api.md, Common Hook API)",
        differences=("D4", "D5"),
    ),
    Case(
        "custom_collections",
        "custom_collections",
        (Run("train.py", ("--out_dir", OUT)),),
        "get_collection().include() and a Collection object added with add_collection, each with its own save and "
        "reduction configuration",
    ),
    Case(
        "save_config_ranges",
        "save_config_ranges",
        (Run("train.py", ("--out_dir", OUT)),),
        "SaveConfig(start_step, end_step, save_interval, save_steps) and a built-in collection with a save_config of "
        "its own",
    ),
    Case(
        "default_hook_functional_loss",
        "default_hook_functional_loss",
        (Run("train.py", ("--output-uri", OUT)),),
        "smdebug's pytorch_hook_demos.py weights-bias-gradients: a hook with only a save configuration, a functional "
        "loss, no hook.close()",
    ),
    Case(
        "disable_default_collection",
        "disable_default_collection",
        (Run("train.py", ("--out_dir", OUT)),),
        'hook.get_collection("losses").save_config.end_step = 0, as docs/api.md says to turn a default collection off',
    ),
    Case(
        "nested_modules_shared_layer",
        "nested_modules_shared_layer",
        (Run("train.py", ("--out_dir", OUT)),),
        "save_all on nested modules, a layer called twice in one forward pass, a GRU returning a tuple",
    ),
    Case(
        "dry_run",
        "dry_run",
        (Run("train.py", ("--out_dir", OUT)),),
        "dry_run=True: nothing saved, and what a trial then reads",
    ),
    Case(
        "get_hook_from_json",
        "get_hook_from_json",
        (Run("train.py"),),
        "smd.get_hook(create_if_not_exists=True) from the JSON file (AWS's zero-script-change-ready scripts), never closed",
        hook_config={
            "HookParameters": {"save_interval": "3"},
            "CollectionConfigurations": [{"CollectionName": "weights"}, {"CollectionName": "gradients"}],
        },
    ),
    Case(
        "trial_range_steps",
        "trial_range_steps",
        (Run("train.py", (OUT,)),),
        "create_trial(path, range_steps=(2, 7)) (docs/analysis.md, Restricting analysis to a range of steps)",
        probe={"create_trial": {"range_steps": [2, 7]}},
    ),
    Case(
        "custom_rule_docs_signature",
        "custom_rule_invoke",
        (Run("train.py", (OUT,)), Run("analyse.py", (OUT, "1.0"), capture=True)),
        "AWS's CustomGradientRule (custom_rules/rules/my_custom_rule.py), whose constructor calls "
        "super().__init__(base_trial) as docs/analysis.md shows, run with invoke_rule",
        probe={"rule": {"module": "my_rules", "class": "CustomGradientRule", "params": {"threshold": "1.0"}}},
        differences=("D2",),
    ),
    Case(
        "rule_required_tensors",
        "rule_required_tensors",
        (Run("train.py", (OUT,)),),
        "a custom rule requiring each weight at the step and the saved step before it (prev_steps), run by invoke_rule "
        "over the whole trial",
        probe={"rule": {"module": "weight_rules", "class": "WeightChangeRule", "params": {"threshold": "0.5"}}},
    ),
    Case(
        "rule_eval_accuracy",
        "rule_eval_accuracy",
        (Run("train.py", ("--out_dir", OUT)),),
        "AWS's check_accuracy rule (pytorch_iterative_model_pruning) over evaluation steps: mode(), mode_step(), loss "
        "inputs saved by a collection of the script's own",
        probe={"rule": {"module": "accuracy_rules", "class": "check_accuracy", "params": {"previous_accuracy": "0.8"}}},
    ),
    Case(
        "realtime_analysis",
        "realtime_analysis",
        (
            Run("train.py", ("--out_dir", OUT, "--steps", "6", "--seconds_per_step", "0.25")),
            Run("analyse.py", (OUT,), capture=True, during=True),
        ),
        "live reading while the job trains (docs/analysis.md): wait_for_steps, has_passed_step, NoMoreData at the end",
        kind="live",
        probe={"follow": {"tensor": "CrossEntropyLoss_output_0", "mode": "TRAIN"}},
        # where the reader catches up with the writer depends on the machine's speed
        not_compared=("analyses/analyse.py/states_while_running*",),
    ),
    Case(
        "s3_trial",
        "s3_trial",
        (Run("train.py", ("s3://smdebug-corpus/jobs/run-1",)), Run("analyse.py", ("s3://smdebug-corpus/jobs/run-1",), capture=True)),
        "a hook whose out_dir is an S3 URI and an S3 trial reading it (docs/analysis.md, Creating S3 trial), in moto's S3",
        kind="s3",
        trial_path="s3://smdebug-corpus/jobs/run-1",
    ),
    Case(
        "spot_restart_hook_in_code",
        "spot_restart_hook_in_code",
        (
            Run("train.py", ("--out_dir", OUT, "--checkpoint_dir", "{checkpoint_dir}", "--die_after_step", "9")),
            Run(
                "train.py", ("--out_dir", OUT, "--checkpoint_dir", "{checkpoint_dir}"), capture=True,
                lost_with_instance=(OUT + "/claim.smd",),
            ),
        ),
        "managed spot training with smd.Hook(out_dir=..., save_config=...) built in code: the job's instance is reclaimed "
        "after a step (os._exit), it restarts from its newest checkpoint and its hook numbers the steps on from the "
        "state kept beside the checkpoints (CHECKPOINT_CONFIG_FILE_PATH, metadata.json)",
        checkpoints=True,
    ),
    Case(
        "rule_stops_training",
        "rule_stops_training",
        (Run("train.py", ("--out_dir", OUT)),),
        "the job's DebugRuleConfigurations (ExplodingTensor with StopTraining) and an exploding run",
        rule_configs=[
            {
                "RuleConfigurationName": "ExplodingTensor",
                "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": '[{"name":"StopTraining"}]'},
            }
        ],
        differences=("D7",),
    ),
    Case(
        "xgboost_hook",
        "xgboost_hook",
        (Run("train.py", ("--out_dir", OUT)),),
        "smdebug.xgboost.Hook from its Python API (docs/xgboost.md) with metrics, predictions, labels, feature importance "
        "and hyperparameters every 5 rounds",
        differences=("D8",),
    ),
    Case(
        "xgboost_defaults",
        "xgboost_defaults",
        (Run("train.py", (OUT,)),),
        "smdebug.xgboost.Hook with its defaults: every 10 rounds, the metrics",
        differences=("D8",),
    ),
    Case(
        "xgboost_from_json",
        "xgboost_from_json",
        (Run("train.py"),),
        "Hook.create_from_json_file() in SageMaker's XGBoost framework mode, data and hyperparameters set as attributes, "
        "SHAP values",
        hook_config=XGBOOST_HOOK_FILE,
        differences=("D8",),
    ),
)


def case(name: str) -> Case:
    for found in CASES:
        if found.name == name:
            return found
    raise KeyError(f"no case named {name!r}; cases: {', '.join(found.name for found in CASES)}")
