"""What a stack allows every execution, set once per stack and read by its Lambdas from their environment. Standard
library only (the CDK app and the Lambdas both read it).

SageMaker Debugger's legacy mode: its grants (the rule evaluators' images and logs, the StopTraining action's
ListTrainingJobs and StopTrainingJob) are deployed only with ``-c legacy_sagemaker_debugger=true``; without them an
execution asking for legacy mode is refused at Initialize.

The cost guardrails, the ceilings on what the stack spends: which instance types a run may launch, how many instances
per job, how many instance-hours one execution may spend (every instance of every job counted), and how many
executions may run at once.

Set once per stack (``-c allowed_instance_types=ml.m5.xlarge,ml.g5.xlarge -c max_instance_count=2
-c max_instance_hours=48 -c max_concurrent_executions=2``), passed to the Lambdas in their environment, and
enforced in IAM where a condition key exists, in the workflow where none does:

* IAM: the train Lambda may CreateTrainingJob only with ``sagemaker:InstanceTypes`` in the list and
  ``sagemaker:MaxRuntimeInSeconds`` at most :attr:`CostGuardrails.max_job_runtime_seconds` (the instance-hours over
  the most instances a job may have, as IAM sees no instance count: a job of the most instances cannot spend more
  than an execution's instance-hours) (infra/functions.py): whatever a caller puts in an execution input, the role
  cannot launch anything else;
* the execution input (Initialize): an instance type or count outside them is refused before anything runs,
  naming the field, what is allowed and the context key that sets it; an execution started while
  ``max_concurrent_executions`` older ones still run is refused (``ConcurrentExecutionsLimit``: no condition key
  counts executions);
* every launch (train Lambda) and every plan: the instance type and count are checked again, a job's
  MaxRuntimeInSeconds is cut to what IAM allows and so that InstanceCount x runtime fits the instance-hours the
  execution has left, and the planner ends the run ("InstanceHoursBudgetSpent") when less than a job's shortest
  run is left.

Without the environment (the local runtime, no stack) there is no guardrail: every check passes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

from contracts import ContractError

#: Set ("on") by the stack: each execution's jobs write their evidence under prefixes only its own Lambdas can name
#: (lambdas/remediation/job/job_identity.py: evidence_prefixes), so one run's job cannot find another's. A stack's
#: jobs share one role; a local run has no other tenant and keeps the prefixes named by the job alone.
SECRET_EVIDENCE_PATHS_ENV = "SECRET_EVIDENCE_PATHS"
#: The Lambdas' environment variable saying whether the stack grants legacy mode (LEGACY_ENABLED or "disabled").
LEGACY_SAGEMAKER_DEBUGGER_ENV = "LEGACY_SAGEMAKER_DEBUGGER"
LEGACY_ENABLED = "enabled"
LEGACY_DISABLED = "disabled"

ALLOWED_INSTANCE_TYPES_ENV = "ALLOWED_INSTANCE_TYPES"
MAX_INSTANCE_COUNT_ENV = "MAX_INSTANCE_COUNT"
MAX_INSTANCE_HOURS_ENV = "MAX_INSTANCE_HOURS"
MAX_CONCURRENT_EXECUTIONS_ENV = "MAX_CONCURRENT_EXECUTIONS"
#: The stack's context keys (cdk.json defaults them).
CONTEXT_KEYS = {
    "allowed_instance_types": ALLOWED_INSTANCE_TYPES_ENV,
    "max_instance_count": MAX_INSTANCE_COUNT_ENV,
    "max_instance_hours": MAX_INSTANCE_HOURS_ENV,
    "max_concurrent_executions": MAX_CONCURRENT_EXECUTIONS_ENV,
}
#: The defaults: CPU and single-GPU types of the sizes the examples train on; two instances; 48 instance-hours (one
#: instance for the whole 48 h an execution may run).
DEFAULT_ALLOWED_INSTANCE_TYPES = (
    "ml.m5.large",
    "ml.m5.xlarge",
    "ml.m5.2xlarge",
    "ml.m5.4xlarge",
    "ml.c5.xlarge",
    "ml.c5.2xlarge",
    "ml.c5.4xlarge",
    "ml.g4dn.xlarge",
    "ml.g4dn.2xlarge",
    "ml.g5.xlarge",
    "ml.g5.2xlarge",
)
DEFAULT_MAX_INSTANCE_COUNT = 2
DEFAULT_MAX_INSTANCE_HOURS = 48.0
#: Two executions at once: at the defaults at most 2 x 48 = 96 instance-hours in any 48 hours.
DEFAULT_MAX_CONCURRENT_EXECUTIONS = 2
#: What SageMaker accepts as InstanceCount, and sane ceilings on instance-hours per execution and executions at once.
MAX_INSTANCE_COUNT_LIMIT = 20
MAX_INSTANCE_HOURS_LIMIT = 20 * 48.0
MAX_CONCURRENT_EXECUTIONS_LIMIT = 100
#: The shortest job a launch makes (contracts.run_spec.MAX_RUN_SECONDS.low): IAM's per-job bound may not be shorter.
SHORTEST_JOB_SECONDS = 60
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9-]+$")


@dataclasses.dataclass(frozen=True)
class CostGuardrails:
    allowed_instance_types: tuple[str, ...] = DEFAULT_ALLOWED_INSTANCE_TYPES
    max_instance_count: int = DEFAULT_MAX_INSTANCE_COUNT
    max_instance_hours: float = DEFAULT_MAX_INSTANCE_HOURS
    max_concurrent_executions: int = DEFAULT_MAX_CONCURRENT_EXECUTIONS

    def __post_init__(self) -> None:
        if not self.allowed_instance_types:
            raise ContractError("allowed_instance_types", "must name at least one instance type, e.g. ml.m5.xlarge")
        for name in self.allowed_instance_types:
            if not _INSTANCE_TYPE.match(name):
                raise ContractError("allowed_instance_types", f"{name!r} is not a SageMaker instance type (ml.<family>.<size>)")
        if not 1 <= self.max_instance_count <= MAX_INSTANCE_COUNT_LIMIT:
            raise ContractError(
                "max_instance_count", f"must be 1-{MAX_INSTANCE_COUNT_LIMIT} (got {self.max_instance_count})"
            )
        if not 0 < self.max_instance_hours <= MAX_INSTANCE_HOURS_LIMIT:
            raise ContractError(
                "max_instance_hours", f"must be above 0 and at most {MAX_INSTANCE_HOURS_LIMIT:g} (got {self.max_instance_hours})"
            )
        if self.max_job_runtime_seconds < SHORTEST_JOB_SECONDS:
            raise ContractError(
                "max_instance_hours",
                f"{self.max_instance_hours:g} instance-hours over {self.max_instance_count} instances leave a job less "
                f"than {SHORTEST_JOB_SECONDS} s; raise it or lower max_instance_count",
            )
        if not 1 <= self.max_concurrent_executions <= MAX_CONCURRENT_EXECUTIONS_LIMIT:
            raise ContractError(
                "max_concurrent_executions",
                f"must be 1-{MAX_CONCURRENT_EXECUTIONS_LIMIT} (got {self.max_concurrent_executions})",
            )

    @property
    def max_instance_seconds(self) -> int:
        return int(self.max_instance_hours * 3600)

    @property
    def max_job_runtime_seconds(self) -> int:
        """The longest a job may run: IAM's bound on MaxRuntimeInSeconds, which IAM checks per job without seeing its
        instance count, so the instance-hours are shared by the most instances a job may have."""
        return self.max_instance_seconds // self.max_instance_count

    def to_environment(self) -> dict[str, str]:
        return {
            ALLOWED_INSTANCE_TYPES_ENV: ",".join(self.allowed_instance_types),
            MAX_INSTANCE_COUNT_ENV: str(self.max_instance_count),
            MAX_INSTANCE_HOURS_ENV: f"{self.max_instance_hours:g}",
            MAX_CONCURRENT_EXECUTIONS_ENV: str(self.max_concurrent_executions),
        }

    @classmethod
    def from_values(cls, values: Mapping[str, object]) -> CostGuardrails:
        """From the stack's context (``allowed_instance_types`` a comma-separated string or a list); a key left out
        takes its default. ContractError names the key."""
        types = values.get("allowed_instance_types")
        if types is None or types == "":
            allowed = DEFAULT_ALLOWED_INSTANCE_TYPES
        elif isinstance(types, str):
            allowed = tuple(name.strip() for name in types.split(",") if name.strip())
        elif isinstance(types, (list, tuple)) and all(isinstance(name, str) for name in types):
            allowed = tuple(types)
        else:
            raise ContractError("allowed_instance_types", f"must be a comma-separated list of instance types (got {types!r})")
        return cls(
            allowed_instance_types=allowed,
            max_instance_count=_whole(values.get("max_instance_count"), DEFAULT_MAX_INSTANCE_COUNT, "max_instance_count"),
            max_instance_hours=_number(values.get("max_instance_hours"), DEFAULT_MAX_INSTANCE_HOURS, "max_instance_hours"),
            max_concurrent_executions=_whole(
                values.get("max_concurrent_executions"), DEFAULT_MAX_CONCURRENT_EXECUTIONS, "max_concurrent_executions"
            ),
        )

    @classmethod
    def from_environment(cls, environment: Mapping[str, str]) -> CostGuardrails | None:
        """The Lambda's guardrails (None without the stack's environment: no guardrail)."""
        if ALLOWED_INSTANCE_TYPES_ENV not in environment:
            return None
        return cls.from_values({key: environment.get(env) for key, env in CONTEXT_KEYS.items()})

    def check_launch(self, instance_type: str, instance_count: int) -> dict[str, str]:
        """{field: problem} for an instance type or count outside the guardrails (empty: allowed)."""
        problems = {}
        if instance_type not in self.allowed_instance_types:
            problems["instance_type"] = (
                f"{instance_type} is not allowed by this stack's cost guardrails; allowed: "
                f"{', '.join(self.allowed_instance_types)} (the stack's -c allowed_instance_types sets the list)"
            )
        if instance_count > self.max_instance_count:
            problems["instance_count"] = (
                f"must be at most {self.max_instance_count} with this stack's cost guardrails (got {instance_count}; "
                "the stack's -c max_instance_count sets it)"
            )
        return problems


def _whole(value: object, default: int, key: str) -> int:
    if value is None or value == "":
        return default
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ContractError(key, f"must be a whole number (got {value!r})") from None
    if not number.is_integer():
        raise ContractError(key, f"must be a whole number (got {value!r})")
    return int(number)


def _number(value: object, default: float, key: str) -> float:
    if value is None or value == "":
        return default
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ContractError(key, f"must be a number of hours (got {value!r})") from None


@dataclasses.dataclass(frozen=True)
class StackGuardrails:
    """What the stack allows every execution (its Lambdas' environment): the cost guardrails, whether SageMaker
    Debugger's legacy mode is deployed (its grants exist only then), and whether jobs write their evidence under
    per-execution secret prefixes."""

    cost: CostGuardrails | None = None
    legacy_sagemaker_debugger: bool = True
    secret_evidence_paths: bool = False

    @classmethod
    def from_environment(cls, environment: Mapping[str, str]) -> StackGuardrails:
        legacy = environment.get(LEGACY_SAGEMAKER_DEBUGGER_ENV, LEGACY_ENABLED)
        secret = environment.get(SECRET_EVIDENCE_PATHS_ENV, "") == "on"
        return cls(CostGuardrails.from_environment(environment), legacy == LEGACY_ENABLED, secret)

    def check(self, instance_type: str, instance_count: int, legacy: bool) -> dict[str, str]:
        problems = self.cost.check_launch(instance_type, instance_count) if self.cost is not None else {}
        if legacy and not self.legacy_sagemaker_debugger:
            problems["legacy_sagemaker_debugger"] = (
                "this stack was deployed without SageMaker Debugger's legacy mode, so its grants (the rule "
                "evaluators' images, logs and StopTraining action) do not exist; leave it out, or deploy with "
                "-c legacy_sagemaker_debugger=true"
            )
        return problems
