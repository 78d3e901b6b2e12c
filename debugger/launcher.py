"""The job launcher: what SageMaker runs (``sagemaker_program``) before the user's own training script.

SageMaker's script mode starts ``python remediation_launcher.py --name value ...``
in the source directory with every hyperparameter as an argument. The workflow
adds reserved ones (``contracts.job``): the user's entry point and the
debugger's hook and rule configuration. The launcher

1. takes the reserved arguments out, so the script's own argument parser sees
   only its own hyperparameters (in argv, ``SM_HPS``, ``SM_USER_ARGS``, ``SM_HP_*``);
2. writes the hook configuration where smdebug's ``Hook.create_from_json_file()``
   reads it (``SMDEBUG_CONFIG_FILE_PATH``) and the rules next to it
   (``DEBUGGER_RULE_CONFIG_FILE_PATH``), so a script written for SageMaker Debugger
   runs unchanged;
3. watches a script that creates no hook of its own (zero script change,
   :mod:`debugger.hook.zero_change`): when the script imports torch or xgboost, the
   debugger attaches to its models, optimizers or ``xgboost.train`` call; a hook
   the script creates wins; and reads the metrics the script only prints with the
   run_spec's metric_definitions, as SageMaker reads its log, for its hooks
   (:mod:`debugger.hook.printed_metrics`); with ``remediation_class_weighting``, corrects the
   script's training cross-entropy for class frequencies (:mod:`debugger.loss_patches.class_weighting`); with
   ``remediation_robust_loss``, trains it on the generalized cross-entropy (:mod:`debugger.loss_patches.robust_loss`);
4. runs the entry point as ``__main__`` (as ``python train.py`` would), and turns
   how it ended into SageMaker's contract: exit code, and the failure file whose
   text becomes the job's FailureReason. A rule's StopTraining ends the job with
   exit code 3 and the rule's failure text; SIGTERM (StopTrainingJob) with 143; a
   script the zero-change hook refuses with 2 and the reason.

It imports neither torch nor numpy (class weighting imports torch only when asked): the script brings the
framework it uses.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from contracts import ContractError
from contracts.debugger_config import validate_hook_config, validate_rule_configs
from contracts.job import (
    CLASS_WEIGHTING_HYPERPARAMETER,
    ENTRY_POINT_HYPERPARAMETER,
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_RULE_STOP,
    EXIT_SUCCESS,
    EXIT_TERMINATED,
    FALLBACK_PACKAGES_DIR,
    HOOK_CONFIG_FILE_ENV,
    HOOK_CONFIG_HYPERPARAMETER,
    METRIC_DEFINITIONS_HYPERPARAMETER,
    ROBUST_LOSS_HYPERPARAMETER,
    RULE_CONFIGS_FILE_ENV,
    RULE_CONFIGS_HYPERPARAMETER,
    is_reserved_hyperparameter,
    join_long_value,
)
from contracts.run_spec import (
    GENERALIZED_CROSS_ENTROPY,
    IN_JOB_CLASS_WEIGHTINGS,
    check_entry_point,
    check_metric_definitions,
)
from debugger.core.log_lines import prefix_debugger_logging
from debugger.hook.failure_file import FailureFile
from debugger.hook.printed_metrics import reading_printed_metrics
from debugger.hook.stop_training import StopTrainingRequested
from debugger.hook.zero_change import ZeroScriptChangeRefused, watch_when_imported
from debugger.loss_patches.class_weighting import weighting_the_training_loss
from debugger.loss_patches.robust_loss import training_on_a_robust_loss


class JobTerminated(BaseException):
    """SIGTERM arrived (StopTrainingJob): stop at once."""


class LaunchError(Exception):
    """The job cannot start as configured; ``kind`` prefixes the failure text."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


def split_arguments(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """(reserved hyperparameters, the script's own arguments in their original order and form)."""
    reserved: dict[str, str] = {}
    user: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        name, has_value, value = token[2:].partition("=") if token.startswith("--") else ("", False, "")
        if is_reserved_hyperparameter(name):
            if has_value:
                reserved[name] = value
                index += 1
            elif index + 1 < len(argv):
                reserved[name] = argv[index + 1]
                index += 2
            else:
                raise LaunchError("InvalidHyperparameters", f"--{name} has no value")
            continue
        user.append(token)
        index += 1
    return reserved, user


def scrub_environment(environ: MutableMapping[str, str], user_args: list[str], entry_point: str) -> None:
    """Take the reserved hyperparameters out of what SageMaker's training toolkit put in the environment."""
    if "SM_HPS" in environ:
        with contextlib.suppress(json.JSONDecodeError, TypeError, AttributeError):
            hyperparameters = json.loads(environ["SM_HPS"])
            environ["SM_HPS"] = json.dumps({k: v for k, v in hyperparameters.items() if not is_reserved_hyperparameter(k)})
    if "SM_USER_ARGS" in environ:
        environ["SM_USER_ARGS"] = json.dumps(user_args)
    for name in [name for name in environ if name.startswith("SM_HP_")]:
        if is_reserved_hyperparameter(name[len("SM_HP_") :].lower()):
            environ.pop(name)
    if "SM_TRAINING_ENV" in environ:
        with contextlib.suppress(json.JSONDecodeError, TypeError, AttributeError):
            training_env = json.loads(environ["SM_TRAINING_ENV"])
            hyperparameters = training_env.get("hyperparameters", {})
            training_env["hyperparameters"] = {
                k: v for k, v in hyperparameters.items() if not is_reserved_hyperparameter(k)
            }
            training_env["user_entry_point"] = entry_point
            environ["SM_TRAINING_ENV"] = json.dumps(training_env)
    environ["SM_USER_ENTRY_POINT"] = entry_point


def write_debugger_files(reserved: Mapping[str, str], environ: MutableMapping[str, str], directory: Path) -> None:
    """The hook configuration as SageMaker writes it into a container (``S3Path``, ``LocalPath``, ...) and our
    rules beside it; their paths go to the environment variables the hook reads."""
    hook_text = reserved.get(HOOK_CONFIG_HYPERPARAMETER)
    rules_text = join_long_value(RULE_CONFIGS_HYPERPARAMETER, reserved)
    try:
        if hook_text:
            hook = validate_hook_config(_json(hook_text, HOOK_CONFIG_HYPERPARAMETER))
            container_form = {("S3Path" if key == "S3OutputPath" else key): value for key, value in hook.items()}
            path = directory / "debughookconfig.json"
            path.write_text(json.dumps(container_form, indent=2), encoding="utf-8")
            environ[HOOK_CONFIG_FILE_ENV] = str(path)
        if rules_text:
            rules = validate_rule_configs(_json(rules_text, RULE_CONFIGS_HYPERPARAMETER))
            path = directory / "debugrulesconfig.json"
            path.write_text(json.dumps(rules, indent=2), encoding="utf-8")
            environ[RULE_CONFIGS_FILE_ENV] = str(path)
    except ContractError as error:
        raise LaunchError("InvalidDebuggerConfiguration", str(error)) from None


def _json(text: str, field: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ContractError(field, f"must be JSON text: {error}") from None


def metric_definitions(reserved: Mapping[str, str]) -> list[dict[str, str]]:
    """The run_spec's metric_definitions the workflow passed (none: [])."""
    text = join_long_value(METRIC_DEFINITIONS_HYPERPARAMETER, reserved)
    if not text:
        return []
    try:
        return check_metric_definitions(_json(text, METRIC_DEFINITIONS_HYPERPARAMETER))
    except ContractError as error:
        raise LaunchError("InvalidMetricDefinitions", str(error)) from None


def class_weighting(reserved: Mapping[str, str]) -> str | None:
    """The class weighting the workflow asked the debugger for (None: the script's loss as it is)."""
    return _loss_change(reserved, CLASS_WEIGHTING_HYPERPARAMETER, IN_JOB_CLASS_WEIGHTINGS, "InvalidClassWeighting",
                        "debugger_class_weighting")


def robust_loss(reserved: Mapping[str, str]) -> str | None:
    """The robust loss the workflow asked the debugger for (None: the script's loss as it is)."""
    return _loss_change(reserved, ROBUST_LOSS_HYPERPARAMETER, (GENERALIZED_CROSS_ENTROPY,), "InvalidRobustLoss",
                        "debugger_robust_loss")


def _loss_change(reserved: Mapping[str, str], name: str, allowed: tuple[str, ...], kind: str, field: str) -> str | None:
    value = reserved.get(name)
    if value is None:
        return None
    if value not in allowed:
        raise LaunchError(
            kind, f"{name} must be {' or '.join(map(repr, allowed))} (got {value!r}); the workflow sets it from "
            f"run_spec.{field}"
        )
    return value


def resolve_entry_point(source_dir: Path, entry_point: str | None) -> Path:
    if not entry_point:
        raise LaunchError("InvalidEntryPoint", f"hyperparameter {ENTRY_POINT_HYPERPARAMETER} is missing: name the script to run")
    try:
        check_entry_point(entry_point)
    except ValueError as error:
        raise LaunchError("InvalidEntryPoint", f"{ENTRY_POINT_HYPERPARAMETER}: {error}") from None
    path = (source_dir / entry_point).resolve()
    if not path.is_file():
        present = sorted(item.name for item in source_dir.glob("*.py"))[:20]
        raise LaunchError(
            "InvalidEntryPoint",
            f"the entry point {entry_point} is not in the source directory {source_dir} (Python files there: "
            f"{', '.join(present) or 'none'})",
        )
    return path


def _close_hooks() -> None:
    """Flush every hook the script created (status document, last steps, S3 mirror), if it made one."""
    hook_base = sys.modules.get("debugger.hook.hook_base")  # one registry: PyTorch's hooks, XGBoost's callbacks
    if hook_base is not None:
        hook_base.close_open_hooks(training_ended=True)


def _terminate(signum: int, frame: object) -> None:
    raise JobTerminated()


def run(argv: list[str], source_dir: Path, environ: MutableMapping[str, str] = os.environ) -> int:
    """Run the user's entry point as SageMaker's script mode would; return the job's exit code."""
    failure = FailureFile(environ)
    # the debugger's configuration files, as SageMaker writes them under /opt/ml/input/config: read when the script
    # creates its hook, removed when the job ends (one directory per job would pile up in a local machine's /tmp)
    config_dir = Path(tempfile.mkdtemp(prefix="remediation-debugger-"))
    try:
        try:
            reserved, user_args = split_arguments(argv)
            entry = resolve_entry_point(source_dir, reserved.get(ENTRY_POINT_HYPERPARAMETER))
            write_debugger_files(reserved, environ, config_dir)
            definitions = metric_definitions(reserved)
            weighting = class_weighting(reserved)
            robust = robust_loss(reserved)
            scrub_environment(environ, user_args, reserved[ENTRY_POINT_HYPERPARAMETER])
        except LaunchError as error:
            failure.write(f"{error.kind}: {error}")
            return EXIT_BAD_INPUT
        return _run_entry_point(entry, user_args, reserved, source_dir, failure, definitions, weighting, robust)
    finally:
        shutil.rmtree(config_dir, ignore_errors=True)


def _run_entry_point(
    entry: Path,
    user_args: list[str],
    reserved: dict[str, str],
    source_dir: Path,
    failure: FailureFile,
    definitions: list[dict[str, str]],
    weighting: str | None = None,
    robust: str | None = None,
) -> int:
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread:
        signal.signal(signal.SIGTERM, _terminate)
    prefix_debugger_logging()  # the debugger's lines in the job's log say they are its own
    if reserved.get(HOOK_CONFIG_HYPERPARAMETER):
        watch_when_imported()  # zero script change: a script without a hook is watched all the same
    sys.argv = [str(entry), *user_args]
    sys.path.insert(0, str(entry.parent))  # what `python train.py` puts first on sys.path
    fallback = source_dir / FALLBACK_PACKAGES_DIR
    if fallback.is_dir() and str(fallback) not in sys.path:
        sys.path.append(str(fallback))  # last: only what the image and the user's requirements lack
    try:
        # the metrics the script only prints reach its hooks while it runs (its last line too, before they close)
        # the class weighting wraps the robust loss: a job with both trains on the class-weighted robust loss
        with reading_printed_metrics(definitions), training_on_a_robust_loss(robust), weighting_the_training_loss(
            weighting
        ):
            runpy.run_path(str(entry), run_name="__main__")
        code = EXIT_SUCCESS
    except SystemExit as exit_request:
        code = _exit_code(exit_request, failure)
    except StopTrainingRequested as stop:
        _close_hooks()
        failure.write(str(stop), unless_written=False)
        return EXIT_RULE_STOP
    except ZeroScriptChangeRefused as refused:
        _close_hooks()
        failure.write(f"{refused.kind}: {refused}", unless_written=False)
        return EXIT_BAD_INPUT
    except (JobTerminated, KeyboardInterrupt):
        print("SIGTERM received: the job was stopped", file=sys.stderr, flush=True)
        _close_hooks()
        return EXIT_TERMINATED
    except Exception as error:  # the script's own failure: the traceback goes to the job's log
        traceback.print_exc()
        _close_hooks()
        failure.write(f"AlgorithmError: {type(error).__name__}: {error}")
        return EXIT_ERROR
    _close_hooks()
    return code


def _exit_code(exit_request: SystemExit, failure: FailureFile) -> int:
    code = exit_request.code
    if code is None or code == 0:
        return EXIT_SUCCESS
    if isinstance(code, int):
        if code == EXIT_RULE_STOP and failure.written_by_script():
            return EXIT_RULE_STOP
        failure.write(f"AlgorithmError: the entry point exited with code {code}")
        return code
    failure.write(f"AlgorithmError: the entry point exited: {code}")
    return EXIT_ERROR


def main(source_dir: str | os.PathLike | None = None) -> None:
    """The process entry: run, then end the process with the job's exit code.

    After a rule stop everything that matters is on disk already (the failure text, the rule status,
    the debug output), so the process ends at once: tearing down the interpreter and the framework takes
    0.3-2 s that SageMaker would bill and the monitor would wait for.
    """
    directory = Path(source_dir) if source_dir is not None else Path.cwd()
    code = run(sys.argv[1:], directory)
    sys.stdout.flush()
    sys.stderr.flush()
    if code in (EXIT_RULE_STOP, EXIT_TERMINATED):
        os._exit(code)
    raise SystemExit(code)
