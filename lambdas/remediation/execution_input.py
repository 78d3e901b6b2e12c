"""What ``StartExecution`` gets, and the first state it becomes.

Two ways to say what to train:

* your own script: ``entry_point`` in ``source_dir`` (an s3:// sourcedir.tar.gz;
  ``remediate`` uploads a local directory for you), its ``hyperparameters``,
  ``channels``, ``metric_definitions``, the ``objective`` and the ``remedies``;
* nothing: the built-in example, the AWS blog post's reference scenario
  (``lambdas.remediation.job.builtin_example``). The AWS sample's own keys
  (``init_warmup_learning_rate``, ``learning_rate``, ``add_batch_norm``,
  ``num_epochs``) set its hyperparameters, and ``policy`` picks one of the
  example's remedy sets (``evidence``, ``anchor``).

:func:`initial_state` checks everything before anything is launched and raises
:class:`InvalidExecutionInput` naming each bad field and the fix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from contracts import ContractError, bucket_layout, debugger_settings, rule_selection
from contracts import run_spec as bounds
from contracts.conventional_hyperparameters import (
    CONVENTIONAL_HYPERPARAMETERS,
    CONVENTIONAL_KINDS,
    conventional_meanings,
    hyperparameter_kinds,
)
from contracts.hyperparameter_values import FLAG, KINDS, TEXT, describe_kind, fits_kind, numbers_written_as_text
from contracts.objective import Objective
from contracts.remedies import adapt_to_script, parse_remedies, remedies_to_json, same_kind
from contracts.rule_feasibility import check_rule_can_fire
from contracts.stack_guardrails import StackGuardrails
from contracts.suggestions import did_you_mean
from lambdas.remediation.job import builtin_example, job_request, training_images
from lambdas.remediation.planning.remedies.sets import POLICY_REMEDIES
from lambdas.remediation.state.payload import PolicyName, WorkflowState
from lambdas.remediation.state.payload_fields import (
    BaseJobName,
    CapacityWait,
    Channels,
    Distribution,
    EntryPoint,
    Flag,
    FrameworkVersion,
    Hyperparameters,
    MetricDefinitions,
    MonitorInterval,
    RetrainingBudget,
    RuleWait,
    S3Uri,
    SpotInterruptions,
    Whole,
    canonical_framework_version,
    no_bool,
)
from lambdas.remediation.state.run_spec import JobSettings, RunSpec
from lambdas.remediation.state.validation_messages import InvalidExecutionInput, describe_validation_error


def _finite_number(value: Any) -> Any:
    no_bool(value)  # nor a string
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number (got {value})")
    return value


#: The example's bounds on the AWS sample's keys (its own script checks the rest of its hyperparameters).
LearningRate = Annotated[float, BeforeValidator(_finite_number), Field(gt=0, le=10)]
NumEpochs = Annotated[Whole, Field(ge=1, le=10_000)]

#: Keys an earlier version took at the top level; now hyperparameters of the built-in example.
MOVED_TO_HYPERPARAMETERS = ("depth", "batch_size", "seed", "activation", "warmup_epochs")


class ExecutionInput(JobSettings):
    """The AWS sample's keys plus ours. Leave out the script to run the built-in example. The job settings every
    run_spec carries, with their defaults, are ``JobSettings``'."""

    model_config = ConfigDict(extra="forbid")

    # the AWS sample's keys: the built-in example's hyperparameters ...
    init_warmup_learning_rate: LearningRate | None = None
    learning_rate: LearningRate | None = None
    add_batch_norm: Flag | None = None
    num_epochs: NumEpochs | None = None
    # ... and the loop's budget
    max_num_retraining: RetrainingBudget = 7  # launches, the first included (the sample's meaning)
    #: The guardrail on monitor passes; left out: the largest that fits the execution's history and timeout.
    max_monitor_transitions: Annotated[Whole, Field(ge=1)] | None = None  # its upper bound: check_execution_budget
    # your training script (left out: the built-in example's), as RunSpec holds it once resolved
    entry_point: EntryPoint | None = None
    source_dir: S3Uri | None = None
    hyperparameters: Hyperparameters | None = None
    #: The framework's image version (default: the newest, the local loop's).
    framework_version: FrameworkVersion | None = None
    channels: Channels | None = None
    metric_definitions: MetricDefinitions | None = None
    base_job_name: BaseJobName | None = None
    distribution: Distribution | None = None
    #: Local runs (instance_type local) only: the local platform reclaims each job's instance at these points, as EC2
    #: reclaims spot capacity, e.g. [{"at_step": 30}, {"after_seconds": 600}] (contracts.spot_interruptions).
    spot_interruptions: SpotInterruptions | None = None
    # what good means and what the planner may change
    objective: dict[str, Any] | None = None
    remedies: dict[str, Any] | None = None
    policy: PolicyName | None = None
    #: For the built-in remedy sets on your script: conventional name -> your script's (e.g. learning_rate -> lr), or
    #: {"name": ..., "values": {conventional value: your script's}} where your script spells the values its own way
    #: (add_batch_norm -> {"name": "norm", "values": {"true": "batch", "false": "none"}}).
    hyperparameter_names: dict[str, str | dict[str, Any]] | None = None
    #: What a hyperparameter is where its name and value say otherwise: name -> integer, real, flag or text.
    hyperparameter_kinds: dict[str, str] | None = None
    #: Whether the planner may change how the job computes the training loss (the debugger settings) after a miss
    #: they would answer. Off by default: the product changes the loss only when you allow it.
    allow_loss_changes: Flag = False
    #: Hyperparameters no remedy may change (by your script's names).
    fixed_hyperparameters: list[str] | None = None
    #: The wait's fallback poll: the job's state change ends the wait at once; this is only its timeout.
    monitor_interval_seconds: MonitorInterval = 600
    #: The wait before relaunching after a capacity shortage (CapacityError, no spot capacity in time).
    capacity_wait_seconds: CapacityWait = bounds.DEFAULT_CAPACITY_WAIT_SECONDS
    #: The wait before looking again at a completed job's rules still evaluating (left out: 60 s, or
    #: monitor_interval_seconds when shorter).
    rule_wait_seconds: RuleWait | None = None

    SAMPLE_KEYS: ClassVar[tuple[str, ...]] = tuple(builtin_example.SAMPLE_KEYS)

    _framework_version = model_validator(mode="before")(canonical_framework_version)

    @property
    def uses_builtin_example(self) -> bool:
        return self.source_dir is None and self.entry_point is None


def default_execution_input() -> dict[str, Any]:
    """Every execution input key that has a default, with it (``None``: decided by the script given)."""
    return {
        name: field.get_default(call_default_factory=True)
        for name, field in ExecutionInput.model_fields.items()
        if not field.is_required()
    }


def initial_state(
    execution_input: Mapping[str, Any], guardrails: StackGuardrails | None = None
) -> WorkflowState:
    """The state before the first launch. Raises InvalidExecutionInput naming each bad field and the fix.

    ``guardrails``: the stack's (its Lambdas' environment); an instance type or count they do not allow, or legacy
    mode in a stack deployed without it, is refused here, and the execution keeps the instance-hours it may use."""
    if not isinstance(execution_input, Mapping):
        raise InvalidExecutionInput({"(input)": f"must be a JSON object (got {type(execution_input).__name__})"})
    problems = {
        key: f"is a hyperparameter of the built-in example now: write it in hyperparameters, e.g. "
        f'{{"hyperparameters": {{"{key}": {json.dumps(execution_input[key])}}}}}'
        for key in MOVED_TO_HYPERPARAMETERS
        if key in execution_input
    }
    try:
        parsed = ExecutionInput.model_validate({k: v for k, v in execution_input.items() if k not in problems})
    except ValidationError as error:
        problems.update(describe_validation_error(error, known=ExecutionInput.model_fields))
    if problems:
        raise InvalidExecutionInput(problems)
    if guardrails is not None:
        problems.update(guardrails.check(parsed.instance_type, parsed.instance_count, parsed.legacy_sagemaker_debugger))
        if problems:
            raise InvalidExecutionInput(problems)
    try:
        state = _resolve(parsed, set(execution_input))
    except ContractError as error:
        raise InvalidExecutionInput({error.field: error.problem}) from None
    except ValidationError as error:
        raise InvalidExecutionInput(describe_validation_error(error)) from None
    if guardrails is not None and guardrails.cost is not None:
        state = state.updated(max_instance_seconds=guardrails.cost.max_instance_seconds)
    return state


def _resolve(given: ExecutionInput, keys: set[str]) -> WorkflowState:
    if given.uses_builtin_example and given.framework != "pytorch":
        raise ContractError(
            "framework",
            f"{given.framework} needs your own script (source_dir and entry_point, e.g. examples/xgboost/train.py); "
            "the built-in example is a PyTorch network",
        )
    if given.debugger_class_weighting in bounds.IN_JOB_CLASS_WEIGHTINGS and given.framework != "pytorch":
        raise ContractError(
            "debugger_class_weighting",
            f"corrects a PyTorch script's cross-entropy; {given.framework} weighs classes with its own parameters "
            "(XGBoost: scale_pos_weight, or sample weights in the training data): leave it out or set it to off",
        )
    if given.debugger_robust_loss == bounds.GENERALIZED_CROSS_ENTROPY and given.framework != "pytorch":
        raise ContractError(
            "debugger_robust_loss",
            f"replaces a PyTorch script's cross-entropy; {given.framework} has no cross-entropy call to replace: leave "
            "it out or set it to off",
        )
    if given.allow_loss_changes and given.framework not in debugger_settings.FRAMEWORKS:
        raise ContractError(
            "allow_loss_changes",
            f"lets the debugger change a PyTorch script's training loss; {given.framework} jobs have no such "
            "change: leave it out",
        )
    if given.rules is not None:
        rule_selection.check_rules_for_framework(given.rules, given.framework)
        _check_rules_can_fire(given.rules, given.debugger_save_interval)
    if given.uses_builtin_example:
        hyperparameters = _example_hyperparameters(given)
        source_dir = builtin_example.source_uri(given.bucket)
        entry_point = builtin_example.ENTRY_POINT
        metric_definitions = given.metric_definitions or builtin_example.EXAMPLE_METRIC_DEFINITIONS
        objective = given.objective if "objective" in keys else dict(builtin_example.OBJECTIVE)
        base_job_name = given.base_job_name or builtin_example.BASE_JOB_NAME
        default_policy = builtin_example.DEFAULT_POLICY
        channels = given.channels if given.channels is not None else builtin_example.channels(given.bucket)
    else:
        if given.source_dir is None:
            raise ContractError("source_dir", "is required with entry_point: the s3:// URI of your sourcedir.tar.gz")
        if given.entry_point is None:
            raise ContractError("entry_point", "is required with source_dir: the script to run, e.g. train.py")
        sample_keys = [key for key in given.SAMPLE_KEYS if getattr(given, key) is not None]
        if sample_keys:
            raise ContractError(
                sample_keys[0],
                "is one of the AWS sample's keys for the built-in example; with your own script give it in "
                "hyperparameters under the name your script takes",
            )
        hyperparameters = dict(given.hyperparameters or {})
        source_dir, entry_point = given.source_dir, given.entry_point
        metric_definitions = given.metric_definitions or []
        objective = given.objective
        base_job_name = given.base_job_name or "remediation-job"
        default_policy = "evidence"
        channels = given.channels or {}  # a script may make its own data

    if objective is not None:
        objective = Objective.from_json(objective).to_json()
    _check_images(given)
    max_monitor_transitions = given.max_monitor_transitions
    if max_monitor_transitions is None:
        max_monitor_transitions = bounds.max_monitor_transitions_allowed(
            given.max_num_retraining, given.monitor_interval_seconds
        )
    bounds.check_execution_budget(given.max_num_retraining, max_monitor_transitions, given.monitor_interval_seconds)
    names, values = _hyperparameter_names(given.hyperparameter_names, hyperparameters)
    hyperparameters = numbers_written_as_text(
        hyperparameters, given.hyperparameter_kinds or {}, conventional_meanings(names, values)
    )
    declared_kinds = _hyperparameter_kinds(given.hyperparameter_kinds, hyperparameters)
    for name in hyperparameters:
        if name in debugger_settings.BY_FIELD:
            raise ContractError(
                f"hyperparameters.{name}", f"is the debugger's {debugger_settings.BY_FIELD[name].name} setting, a "
                f"run_spec key of its own: give it as \"{name}\" beside hyperparameters"
            )
    fixed = _fixed_hyperparameters(given.fixed_hyperparameters, hyperparameters)
    settings = {
        **hyperparameters,
        **debugger_settings.settings_of(
            {"debugger_class_weighting": given.debugger_class_weighting, "debugger_robust_loss": given.debugger_robust_loss},
            given.framework,
        ),
    }
    policy, remedies = _resolve_remedies(given, settings, default_policy, declared_kinds)
    settings = {name: getattr(given, name) for name in JobSettings.model_fields if name != "tensorboard_output_path"}
    run_spec = RunSpec(
        **settings,
        entry_point=entry_point,
        source_dir=source_dir,
        hyperparameters=hyperparameters,
        framework_version=given.framework_version,
        channels=channels,
        metric_definitions=metric_definitions,
        base_job_name=base_job_name,
        tensorboard_output_path=bounds.check_tensorboard_output_path(
            given.tensorboard_output_path or bucket_layout.default_tensorboard_output_uri(given.bucket), given.bucket
        ),
        distribution=given.distribution or {},
        spot_interruptions=given.spot_interruptions or [],
    )
    state = WorkflowState(
        run_spec=run_spec,
        policy=policy,
        remedies=remedies,
        hyperparameter_names=names,
        hyperparameter_values=values,
        hyperparameter_kinds=declared_kinds,
        allow_loss_changes=given.allow_loss_changes,
        fixed_hyperparameters=fixed,
        objective=objective,
        max_num_retraining=given.max_num_retraining,
        max_monitor_transitions=max_monitor_transitions,
        monitor_interval_seconds=given.monitor_interval_seconds,
        capacity_wait_seconds=given.capacity_wait_seconds,
        rule_wait_seconds=(
            given.rule_wait_seconds
            if given.rule_wait_seconds is not None
            else min(bounds.DEFAULT_RULE_WAIT_SECONDS, given.monitor_interval_seconds)
        ),
    )
    try:
        job_request.check_hyperparameter_count(state)
    except job_request.JobRequestError as error:
        field, _, problem = str(error).partition(": ")
        raise ContractError(field.removeprefix("run_spec."), problem) from None
    return state


def _check_rules_can_fire(rules: list[dict[str, Any]], save_interval: int) -> None:
    """A selected rule that could never fire under this save interval is refused before any launch: a quiet rule
    that watched nothing would read as a healthy run."""
    for index, rule in enumerate(rules):
        try:
            check_rule_can_fire(rule["name"], rule["parameters"], save_interval)
        except ContractError as error:
            setting = error.field.split(".", 1)[1]
            field = "debugger_save_interval" if setting == "save_interval" else f"rules[{index}].parameters.{setting}"
            raise ContractError(field, f"{rule['name']}: {error.problem}") from None


def _check_images(given: ExecutionInput) -> None:
    """The job's image must exist for this region, instance type and version before anything is launched."""
    try:
        training_images.training_image_uri(given.region, given.instance_type, given.framework_version, given.framework)
        if given.legacy_sagemaker_debugger:
            training_images.rule_evaluator_image_uri(given.region)
    except training_images.TrainingImageError as error:
        field, _, problem = str(error).partition(": ")
        raise ContractError(field.removeprefix("run_spec."), problem) from None


def _example_hyperparameters(given: ExecutionInput) -> dict[str, Any]:
    hyperparameters = dict(builtin_example.HYPERPARAMETERS)
    for key, name in builtin_example.SAMPLE_KEYS.items():
        value = getattr(given, key)
        if value is None:
            continue
        if given.hyperparameters and name in given.hyperparameters:
            raise ContractError(key, f"sets the hyperparameter {name}, which hyperparameters sets too; give it once")
        hyperparameters[name] = value
    for name, value in (given.hyperparameters or {}).items():
        default = builtin_example.HYPERPARAMETERS.get(name)
        if default is not None and not same_kind(value, default):  # "64" for a batch size: say so, not convert
            raise ContractError(
                f"hyperparameters.{name}",
                f"must be {'true/false' if isinstance(default, bool) else 'a number' if not isinstance(default, str) else 'text'} "
                f"like the example's default {json.dumps(default)} (got {json.dumps(value)})",
            )
    hyperparameters.update(given.hyperparameters or {})
    return hyperparameters


def _resolve_remedies(
    given: ExecutionInput, hyperparameters: Mapping[str, Any], default_policy: str, declared_kinds: Mapping[str, str]
) -> tuple[str, dict[str, Any]]:
    """(policy, remedies JSON): the run's own declaration, or a named built-in set on the run's hyperparameters."""
    names, values = _hyperparameter_names(given.hyperparameter_names, hyperparameters)
    if given.remedies is not None:
        if given.policy not in (None, "declared"):
            raise ContractError(
                "policy", f"{given.policy!r} brings its own remedies; leave out remedies or set policy to declared"
            )
        if given.hyperparameter_names:
            raise ContractError(
                "hyperparameter_names",
                "maps the built-in remedy sets onto your hyperparameters; your own remedies name them already: "
                "leave it out",
            )
        kinds = hyperparameter_kinds(hyperparameters, {}, declared_kinds)
        return "declared", remedies_to_json(parse_remedies(given.remedies, hyperparameters, kinds=kinds))
    policy = given.policy or default_policy
    if policy == "declared":
        return policy, {}
    adapted = adapt_to_script(POLICY_REMEDIES[policy], names, hyperparameters, values)
    try:
        kinds = hyperparameter_kinds(hyperparameters, names, declared_kinds, values)
        parse_remedies(adapted, hyperparameters, check_reachable=False, check_size=False, kinds=kinds)
    except ContractError as error:
        raise ContractError(
            "policy",
            f"the {policy!r} remedies do not fit your hyperparameters ({error.field}: {error.problem}); name them in "
            "hyperparameter_names or declare remedies",
        ) from None
    return policy, {}  # a built-in set is code: the state names it (policy, hyperparameter_names), not copies it


def _fixed_hyperparameters(names: list[str] | None, hyperparameters: Mapping[str, Any]) -> list[str]:
    """The hyperparameters no remedy may change: each one the run has."""
    for index, name in enumerate(names or []):
        if name not in hyperparameters:
            known = ", ".join(sorted(hyperparameters)) or "none"
            raise ContractError(
                f"fixed_hyperparameters[{index}]",
                f"{name!r} is not in hyperparameters{did_you_mean(str(name), hyperparameters)} (known: {known})",
            )
    return list(dict.fromkeys(names or []))


def _hyperparameter_kinds(kinds: Mapping[str, str] | None, hyperparameters: Mapping[str, Any]) -> dict[str, str]:
    """Check the declared kinds: names the run's hyperparameters hold, known kinds, starting values of that kind."""
    checked: dict[str, str] = {}
    for name, kind in (kinds or {}).items():
        where = f"hyperparameter_kinds.{name}"
        if name not in hyperparameters:
            known = ", ".join(sorted(hyperparameters)) or "none"
            raise ContractError(where, f"{name!r} is not in hyperparameters (known: {known})")
        if kind not in KINDS:
            raise ContractError(where, f"must be one of {', '.join(KINDS)} (got {kind!r})")
        if not fits_kind(hyperparameters[name], kind):
            raise ContractError(
                where,
                f"says {kind} but {name}'s starting value is {json.dumps(hyperparameters[name])}; "
                f"{kind} needs {describe_kind(kind)}",
            )
        checked[name] = kind
    return checked


def _hyperparameter_names(
    names: Mapping[str, Any] | None, hyperparameters: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Check the conventional -> script name map: known conventional names, names the run's hyperparameters hold, and
    for a name given as {"name", "values"} its value map (conventional value -> the script's). Returns (names, value
    maps)."""
    checked: dict[str, str] = {}
    spelled: dict[str, dict[str, Any]] = {}
    for conventional, given in (names or {}).items():
        where = f"hyperparameter_names.{conventional}"
        if conventional not in CONVENTIONAL_HYPERPARAMETERS:
            raise ContractError(
                where, f"is not a name the built-in remedies use; they use {', '.join(CONVENTIONAL_HYPERPARAMETERS)}"
            )
        own = given
        if isinstance(given, Mapping):
            unknown = set(given) - {"name", "values"}
            if unknown or "name" not in given:
                raise ContractError(
                    where, 'must be your script\'s name, or {"name": ..., "values": {conventional value: yours}} '
                    f"(got keys {sorted(given)})"
                )
            own = given["name"]
        if not isinstance(own, str) or own not in hyperparameters:
            known = ", ".join(sorted(hyperparameters)) or "none"
            raise ContractError(
                where,
                f"must name one of the run's hyperparameters (known: {known}; got {own!r}); add it to hyperparameters "
                "with its starting value",
            )
        if own in checked.values():
            raise ContractError(where, f"{own!r} is named for two conventional names; give each its own")
        checked[conventional] = own
        if isinstance(given, Mapping) and "values" in given:
            spelled[conventional] = _value_map(conventional, given["values"], hyperparameters[own], f"{where}.values")
    return checked, spelled


def _value_map(conventional: str, values: Any, start: Any, where: str) -> dict[str, Any]:
    """A conventional name's value map: conventional values the built-in remedies write -> the script's spelling,
    each of the kind the script's starting value is."""
    kind = CONVENTIONAL_KINDS[conventional]
    if kind not in (FLAG, TEXT):
        raise ContractError(where, f"maps the values of a flag or a word; {conventional} is {describe_kind(kind)}")
    if not isinstance(values, Mapping) or not values:
        raise ContractError(where, 'must be an object of conventional value: your script\'s, e.g. {"true": "batch"}')
    for key, value in values.items():
        if kind == FLAG and key not in ("true", "false"):
            raise ContractError(f"{where}.{key}", f"{conventional} is true or false: map \"true\" and \"false\"")
        if not isinstance(value, (str, int, float, bool)) or not same_kind(value, start):
            raise ContractError(
                f"{where}.{key}", f"must be a value like the script's starting one ({json.dumps(start)}; got "
                f"{json.dumps(value)})"
            )
    return dict(values)


__all__ = ["ExecutionInput", "InvalidExecutionInput", "default_execution_input", "initial_state"]
