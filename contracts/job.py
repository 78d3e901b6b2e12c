"""The training job's side of SageMaker's container contract, as both sides use it. Standard library only.

The workflow writes a job's hyperparameters with :func:`encode_hyperparameters`
(every value a string, JSON-encoded as the SageMaker Python SDK sends framework
hyperparameters); the job reads them back from script-mode ``--name value``
arguments (:func:`parse_script_mode_arguments`) or SageMaker's JSON file
(:func:`decode_hyperparameter`).

Besides the user's own hyperparameters the workflow passes a few reserved ones
(``remediation_*``) to the job launcher (``debugger.launcher``), which takes
them out before the user's entry point sees its arguments, so a script's own
argument parser never meets them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from contracts import ContractError
from contracts.step_names import STEP_NAME

#: Hyperparameters SageMaker's script mode adds for the platform itself; the training toolkit does
#: not pass them to the entry point.
SAGEMAKER_RESERVED_PREFIX = "sagemaker_"
#: Hyperparameters the workflow adds for the job launcher; the launcher takes them out of argv.
REMEDIATION_RESERVED_PREFIX = "remediation_"
#: The user's entry point (relative to the source directory) the launcher runs.
ENTRY_POINT_HYPERPARAMETER = "remediation_entry_point"
#: The debugger's hook configuration (SageMaker's DebugHookConfig shape) as JSON text.
HOOK_CONFIG_HYPERPARAMETER = "remediation_debugger_hook_config"
#: The debugger's rules (SageMaker's DebugRuleConfigurations shape) as JSON text.
RULE_CONFIGS_HYPERPARAMETER = "remediation_debugger_rule_configs"
#: The run_spec's metric_definitions (SageMaker's MetricDefinitions) as JSON text: the debugger reads the metrics a
#: script only prints from the job's own output, as SageMaker reads them from its log.
METRIC_DEFINITIONS_HYPERPARAMETER = "remediation_metric_definitions"
#: "balanced" or "logit_adjusted" when the debugger corrects the script's training loss for class frequencies
#: (run_spec.debugger_class_weighting).
CLASS_WEIGHTING_HYPERPARAMETER = "remediation_class_weighting"
#: "generalized_cross_entropy" when the debugger trains the script on that loss (run_spec.debugger_robust_loss).
ROBUST_LOSS_HYPERPARAMETER = "remediation_robust_loss"
RESERVED_HYPERPARAMETERS = (
    ENTRY_POINT_HYPERPARAMETER,
    HOOK_CONFIG_HYPERPARAMETER,
    RULE_CONFIGS_HYPERPARAMETER,
    METRIC_DEFINITIONS_HYPERPARAMETER,
    CLASS_WEIGHTING_HYPERPARAMETER,
    ROBUST_LOSS_HYPERPARAMETER,
)

#: The launcher file at the root of every source archive: SageMaker's ``sagemaker_program``.
LAUNCHER_PROGRAM = "remediation_launcher.py"
#: The source archive's directory of packages the job needs but a training image may lack (tensorboardX: SageMaker's
#: PyTorch images 2.11-2.13 do not install it). The launcher puts it last on sys.path, so an image's or a user's
#: own copy always wins.
FALLBACK_PACKAGES_DIR = "remediation_fallback_packages"

#: SageMaker's limits on the HyperParameters map (CreateTrainingJob).
MAX_HYPERPARAMETERS = 100
MAX_HYPERPARAMETER_NAME_LENGTH = 256
MAX_HYPERPARAMETER_VALUE_LENGTH = 2500
#: A name a script-mode entry point can take as ``--name``.
HYPERPARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,255}$")

# ------------------------------------------------------------------ environment and files in the job

#: smdebug's variable and default path for the hook configuration file (``Hook.create_from_json_file``).
HOOK_CONFIG_FILE_ENV = "SMDEBUG_CONFIG_FILE_PATH"
DEFAULT_HOOK_CONFIG_FILE = "/opt/ml/input/config/debughookconfig.json"
#: Our rules, next to the hook configuration (SageMaker ran smdebug's rules in separate jobs; ours run in the job).
RULE_CONFIGS_FILE_ENV = "DEBUGGER_RULE_CONFIG_FILE_PATH"
#: The debugger's output directory; SageMaker's default for smdebug.
DEBUG_OUTPUT_DIR_ENV = "DEBUG_OUTPUT_DIR"
DEFAULT_DEBUG_OUTPUT_DIR = "/opt/ml/output/tensors"
#: Whether the debugger mirrors its output to the hook configuration's S3 path itself.
DEBUG_OUTPUT_S3_SYNC_ENV = "DEBUG_OUTPUT_S3_SYNC"
#: The artifacts bucket's region, for the mirror's S3 client (the job request sets it; AWS_REGION and
#: AWS_DEFAULT_REGION are the fallbacks): a client without a region signs for us-east-1, and a bucket elsewhere
#: refuses it.
DEBUG_OUTPUT_S3_REGION_ENV = "DEBUG_OUTPUT_S3_REGION"
#: SageMaker's TensorBoardOutputConfig in the container: it writes {"LocalPath": ..., "S3OutputPath": ...} to this
#: file and uploads what the job writes under LocalPath to {S3OutputPath}/{job}/tensorboard-output/ (smdebug's
#: variable and default path; the training toolkit also names the directory in SM_INPUT_CONFIG_DIR).
TENSORBOARD_CONFIG_FILE_ENV = "TENSORBOARD_CONFIG_FILE_PATH"
TENSORBOARD_CONFIG_FILE = "tensorboardoutputconfig.json"
INPUT_CONFIG_DIR_ENV = "SM_INPUT_CONFIG_DIR"
#: SageMaker's CheckpointConfig in the container: it writes {"LocalPath": ..., "S3Uri": ...} to this file, copies the
#: S3Uri into LocalPath when the job (re)starts and uploads what the job writes there (smdebug's variable and default
#: path; smdebug keeps its spot-resume state beside the checkpoints: debugger.storage.state_store).
CHECKPOINT_CONFIG_FILE_ENV = "CHECKPOINT_CONFIG_FILE_PATH"
CHECKPOINT_CONFIG_FILE = "checkpointconfig.json"
DEFAULT_CHECKPOINT_CONFIG_FILE = "/opt/ml/input/config/checkpointconfig.json"
DEFAULT_TENSORBOARD_LOCAL_PATH = "/opt/ml/output/tensorboard"
#: SageMaker turns the text of this file into DescribeTrainingJob's FailureReason.
FAILURE_FILE_ENV = "TRAINING_FAILURE_FILE"
DEFAULT_FAILURE_FILE = "/opt/ml/output/failure"
#: DescribeTrainingJob's FailureReason holds at most this many characters.
MAX_FAILURE_TEXT = 1024
DEFAULT_INPUT_CONFIG_DIR = "/opt/ml/input/config"
#: How many GPUs SageMaker gave the job's container (its training toolkit sets it; 0 on CPU instances).
NUM_GPUS_ENV = "SM_NUM_GPUS"
#: Where a job's checkpoints live: SageMaker's CheckpointConfig.LocalPath (written to the checkpoint configuration
#: file, smdebug's variable and default path; /opt/ml/checkpoints by default); ``TRAINING_CHECKPOINT_DIR`` when the
#: job runs elsewhere (local mode).
CHECKPOINT_DIR_ENV = "TRAINING_CHECKPOINT_DIR"
CHECKPOINT_CONFIG_FILE_ENV = "CHECKPOINT_CONFIG_FILE_PATH"
DEFAULT_CHECKPOINT_CONFIG_FILE = "/opt/ml/input/config/checkpointconfig.json"
DEFAULT_CHECKPOINT_DIR = "/opt/ml/checkpoints"


def checkpoint_directory(environ: Mapping[str, str]) -> str | None:
    """The job's checkpoint directory, or None when it has none (no CheckpointConfig)."""
    if environ.get(CHECKPOINT_DIR_ENV):
        return environ[CHECKPOINT_DIR_ENV]
    config_file = environ.get(CHECKPOINT_CONFIG_FILE_ENV) or DEFAULT_CHECKPOINT_CONFIG_FILE
    try:
        with open(config_file, encoding="utf-8") as handle:
            local_path = json.load(handle).get("LocalPath")
    except (OSError, ValueError, AttributeError):
        local_path = None
    if isinstance(local_path, str) and local_path:
        return local_path
    return DEFAULT_CHECKPOINT_DIR if os.path.isdir(DEFAULT_CHECKPOINT_DIR) else None



def training_device(cuda_devices: int, environ: Mapping[str, str]) -> tuple[str, str]:
    """("cuda" or "cpu", why) for a job whose torch sees ``cuda_devices`` CUDA devices (0 when
    ``torch.cuda.is_available()`` is false), given SageMaker's SM_NUM_GPUS when it is set.

    SM_NUM_GPUS=0 keeps the CPU even if a GPU is visible (the platform gave the job none); a GPU instance whose torch
    sees no CUDA device trains on the CPU and says so, as that is an image mismatch to fix, not to hide. One device
    is used: multi-GPU training is not part of this contract yet.
    """
    seen = f"torch sees {cuda_devices} CUDA device{'s' if cuda_devices != 1 else ''}" if cuda_devices else (
        "torch sees no CUDA device"
    )
    given = environ.get(NUM_GPUS_ENV)
    if given is not None and not given.strip().isdigit():
        note = f"{NUM_GPUS_ENV}={given!r} is not a number, so "
        given = None
    else:
        note = ""
    if given is None:
        return ("cuda", f"{note}{seen}") if cuda_devices else ("cpu", f"{note}{seen}")
    gpus = int(given)
    if gpus == 0:
        return "cpu", f"{NUM_GPUS_ENV}=0, {seen}"
    if cuda_devices == 0:
        return "cpu", (
            f"{NUM_GPUS_ENV}={gpus} but {seen}: training on the CPU; the job's image must be the CUDA one for a GPU "
            "instance type"
        )
    extra = f"; uses 1 of the {gpus}" if gpus > 1 else ""
    return "cuda", f"{NUM_GPUS_ENV}={gpus}, {seen}{extra}"


# ------------------------------------------------------------------ exit codes

EXIT_SUCCESS = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_RULE_STOP = 3
EXIT_TERMINATED = 143  # 128 + SIGTERM: how a shell reports a job stopped by SIGTERM

# ------------------------------------------------------------------ failure texts

#: The failure text of a job a rule stopped: written by the job, read back by the monitor (the step's groups:
#: contracts.step_names.read_step_name).
STOP_TRAINING_FAILURE = re.compile(rf"StopTraining: rule (?P<rule>[A-Za-z0-9_-]+) found an issue at {STEP_NAME}")


def stop_training_failure_text(rule: str, step: int, message: str, named: str | None = None) -> str:
    """``named``: the step as the user counts it, with the global ``step`` beside it (contracts.step_names)."""
    return f"StopTraining: rule {rule} found an issue at {named or f'step {step}'}: {message}"


#: A job that ran out of memory, as its FailureReason says it: SageMaker's own "OutOfMemoryError: ..." (and
#: PyTorch's torch.OutOfMemoryError a script's failure text carries), or a training process killed by SIGKILL,
#: which is how the kernel's out-of-memory killer ends one (exit code 137 = 128 + 9, as the training toolkit's
#: "ExitCode 137" reports it).
OUT_OF_MEMORY_FAILURE = re.compile(
    r"OutOfMemoryError|out of memory|\bExitCode:?\s*137\b|\bexit(?:ed with)? code 137\b|killed by SIGKILL",
    re.IGNORECASE,
)


#: A job whose training step got a batch of one sample where a normalization layer needs more, as PyTorch says it
#: (BatchNorm: "Expected more than 1 value per channel when training"; InstanceNorm: "... more than 1 spatial
#: element when training"): the training set's size leaves one sample in its last batch, and a DataLoader without
#: drop_last hands it over. Another batch size leaves another remainder.
BATCH_OF_ONE_FAILURE = re.compile(r"Expected more than 1 (?:value per channel|spatial element) when training")


#: A job that failed because its data is wrong, as its FailureReason says it: a script's own DataError or
#: InvalidChannel (the built-in example's), PyTorch's "Target 12 is out of bounds" (a label outside the model's
#: classes; on a GPU it surfaces as "device-side assert triggered"), and scikit-learn's / XGBoost's
#: "Input contains NaN" / "Label contains NaN". No hyperparameter fixes these: the run ends without a relaunch.
DATA_ERROR_FAILURE = re.compile(
    r"\bDataError\b|\bInvalidChannel\b|Target -?\d+ is out of bounds|device-side assert triggered"
    r"|\b(?:Input|Label|Labels)(?: X)? contains? NaN",
    re.IGNORECASE,
)


def killed_process_failure_text(signal_name: str, signal_number: int, peak_memory: str | None) -> str:
    """The FailureReason of a job whose training process a signal killed (not a stop the platform asked for)."""
    code = 128 + signal_number
    memory = f"; peak memory {peak_memory}" if peak_memory else ""
    if signal_name == "SIGKILL":
        return (
            f"OutOfMemoryError: the training process was killed by SIGKILL (signal 9), as the kernel's "
            f"out-of-memory killer ends a process (ExitCode {code}){memory}"
        )
    return f"AlgorithmError: the training process was killed by {signal_name} (signal {signal_number}, ExitCode {code}){memory}"


# ------------------------------------------------------------------ hyperparameters


class HyperparameterError(ContractError):
    """A hyperparameter is unknown, ill-typed or out of range; the message names it and what is allowed."""

    def __init__(self, field: str, problem: str):
        super().__init__(field, problem)
        self.args = (f"hyperparameter '{field}': {problem}",)

    def __str__(self) -> str:
        return self.args[0]


def render_hyperparameter(value: Any) -> str:
    """The string SageMaker's HyperParameters map holds for a value: booleans as true/false, JSON for
    lists and objects, ``str`` otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def encode_hyperparameters(values: Mapping[str, Any]) -> dict[str, str]:
    """Every value rendered as a string and JSON-encoded once more, as the SageMaker Python SDK sends
    framework hyperparameters (0.1 -> "\\"0.1\\""); the training toolkit decodes it before the entry point runs."""
    encoded = {}
    for name, value in values.items():
        text = json.dumps(render_hyperparameter(value))
        if len(text) > MAX_HYPERPARAMETER_VALUE_LENGTH:
            raise HyperparameterError(
                name, f"is {len(text)} characters once encoded; SageMaker allows {MAX_HYPERPARAMETER_VALUE_LENGTH}"
            )
        encoded[name] = text
    return encoded


def split_long_value(name: str, text: str, limit: int = MAX_HYPERPARAMETER_VALUE_LENGTH) -> dict[str, str]:
    """A reserved value longer than SageMaker's limit per hyperparameter as consecutive parts: ``name``,
    ``name_1``, ``name_2``, ... each at most ``limit`` characters once JSON-encoded (encode_hyperparameters).
    Twenty rules' configurations are about 5,000 characters; :func:`join_long_value` puts them back together."""
    parts: list[str] = []
    rest = text
    while rest or not parts:
        size = min(len(rest), limit - 2)  # the encoding's two quotes
        while size > 1 and len(json.dumps(rest[:size])) > limit:  # escapes (\" and \\) take room too
            size = size * 3 // 4
        parts.append(rest[:size])
        rest = rest[size:]
    return {(name if index == 0 else f"{name}_{index}"): part for index, part in enumerate(parts)}


def join_long_value(name: str, values: Mapping[str, str]) -> str | None:
    """The value :func:`split_long_value` split into ``name``, ``name_1``, ...; None when ``name`` is absent."""
    if name not in values:
        return None
    text, index = values[name], 1
    while f"{name}_{index}" in values:
        text += values[f"{name}_{index}"]
        index += 1
    return text


def is_reserved_hyperparameter(name: str) -> bool:
    """A hyperparameter the workflow adds for the launcher (its parts included), never the script's."""
    return name.startswith(REMEDIATION_RESERVED_PREFIX)


def decode_hyperparameter(value: str) -> str:
    """One value as the entry point sees it: SageMaker's JSON file may hold it JSON-encoded a second
    time ("\\"0.1\\""); the training toolkit decodes that once."""
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value
        if isinstance(decoded, str):
            return decoded
    return value if isinstance(value, str) else render_hyperparameter(value)


def script_mode_arguments(hyperparameters: Mapping[str, str]) -> list[str]:
    """``--name value`` for every hyperparameter the entry point gets (SageMaker's own left out)."""
    arguments = []
    for name, value in hyperparameters.items():
        if not name.startswith(SAGEMAKER_RESERVED_PREFIX):
            arguments += [f"--{name}", decode_hyperparameter(value)]
    return arguments


def parse_script_mode_arguments(argv: list[str]) -> dict[str, str]:
    """Turn script mode's ``--name value`` (or ``--name=value``) arguments into a map."""
    parsed: dict[str, str] = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        if not token.startswith("--"):
            raise HyperparameterError(token, "expected --name value arguments as SageMaker script mode passes them")
        name = token[2:]
        if "=" in name:
            name, value = name.split("=", 1)
            index += 1
        else:
            if index + 1 >= len(argv):
                raise HyperparameterError(name, "has no value")
            value = argv[index + 1]
            index += 2
        parsed[name.replace("-", "_")] = value
    return parsed
