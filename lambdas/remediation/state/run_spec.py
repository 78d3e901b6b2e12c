"""The run_spec as the payload holds it: what one training job runs (one snapshot per attempt, every field given).
Built from the execution input by ``lambdas.remediation.execution_input``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, model_validator

from contracts import debugger_settings, rule_selection
from contracts import remedies as remedies_contract
from contracts import run_spec as bounds
from lambdas.remediation.state.payload_fields import (
    STRICT,
    BaseJobName,
    BucketName,
    Channels,
    ClassWeighting,
    Distribution,
    EntryPoint,
    Flag,
    Framework,
    FrameworkVersion,
    Hyperparameters,
    HyperparameterValue,
    InstanceCount,
    InstanceType,
    MaxRunSeconds,
    MetricDefinitions,
    Region,
    RobustLoss,
    RoleArn,
    RuleSelection,
    S3Uri,
    SaveInterval,
    SpotInterruptions,
    canonical_framework_version,
)
from lambdas.remediation.state.validation_messages import clip


class JobSettings(BaseModel):
    """The settings of a training job that the execution input gives and every run_spec snapshot carries, with their
    defaults: one home for them (``RunSpec`` adds what a launched job needs resolved; ``ExecutionInput`` what only a
    run's start has)."""

    model_config = STRICT

    #: The framework the script trains with (its container image, debugger hook and default rules).
    framework: Framework = bounds.DEFAULT_FRAMEWORK
    bucket: BucketName
    instance_type: InstanceType = "ml.m5.xlarge"
    #: Instances per job (ResourceConfig.InstanceCount; the SageMaker SDK's instance_count).
    instance_count: InstanceCount = 1
    region: Region
    sm_role: RoleArn
    debugger_save_interval: SaveInterval = 10
    #: The built-in rules that watch each job, with their parameters; None: contracts.rule_selection.DEFAULT_RULES.
    rules: RuleSelection | None = None
    use_spot_instances: Flag = False
    #: A spot job that never got capacity within its MaxWaitTimeInSeconds is relaunched on demand (costs more).
    spot_fallback_on_demand: Flag = False
    #: The training loss the job's debugger computes for a PyTorch script (contracts.debugger_settings): "off", the
    #: script's own; the planner changes them only with the user's consent.
    debugger_class_weighting: ClassWeighting = bounds.DEFAULT_CLASS_WEIGHTING
    debugger_robust_loss: RobustLoss = bounds.DEFAULT_ROBUST_LOSS
    legacy_sagemaker_debugger: Flag = False
    max_run_seconds: MaxRunSeconds = 3600
    #: TensorBoardOutputConfig.S3OutputPath: each job's event files land at {it}{job}/tensorboard-output/; None: the
    #: default beside the debug output.
    tensorboard_output_path: S3Uri | None = None


class RunSpec(JobSettings):
    """What one training job runs. One snapshot per attempt, every field given."""

    entry_point: EntryPoint
    source_dir: S3Uri
    hyperparameters: Hyperparameters
    framework_version: FrameworkVersion
    channels: Channels
    metric_definitions: MetricDefinitions
    base_job_name: BaseJobName
    #: How the container launches the script on several instances (contracts.distributed).
    distribution: Distribution = Field(default_factory=dict)
    #: Local runs only: the local platform reclaims each job's instance at these points (contracts.spot_interruptions).
    spot_interruptions: SpotInterruptions = Field(default_factory=list)

    _framework_version = model_validator(mode="before")(canonical_framework_version)

    @model_validator(mode="after")
    def _local_instances_cannot_use_spot(self) -> RunSpec:
        if self.use_spot_instances and self.instance_type in bounds.LOCAL_INSTANCE_TYPES:
            raise ValueError("use_spot_instances: must be false when instance_type is local (spot is a cloud option)")
        if self.spot_interruptions and self.instance_type not in bounds.LOCAL_INSTANCE_TYPES:
            raise ValueError(
                f"spot_interruptions: simulates spot interruptions on the local training platform only; set "
                f"instance_type to {' or '.join(bounds.LOCAL_INSTANCE_TYPES)} (got {self.instance_type}), or leave it "
                "out (in the cloud, use_spot_instances asks SageMaker for spot capacity and EC2 interrupts it)"
            )
        return self

    def summary(self, limit: int = 70) -> str:
        """'lr=0.1, grad_clip=0, epochs=3' for notifications and reasons (cut at ``limit`` characters)."""
        return summarize_hyperparameters(self.hyperparameters, limit)

    def with_hyperparameters(self, hyperparameters: Mapping[str, HyperparameterValue]) -> RunSpec:
        return RunSpec.model_validate({**self.model_dump(), "hyperparameters": dict(hyperparameters)})

    def debugger_settings(self) -> dict[str, str]:
        """The debugger settings its job runs with (run_spec field -> value; none for a framework without them)."""
        return debugger_settings.settings_of(self.model_dump(), self.framework)

    def with_settings(self, settings: Mapping[str, Any]) -> RunSpec:
        """This run_spec running ``settings``: hyperparameters by name, debugger settings by run_spec field."""
        hyperparameters = {name: value for name, value in settings.items() if name not in debugger_settings.BY_FIELD}
        fields = {name: value for name, value in settings.items() if name in debugger_settings.BY_FIELD}
        return RunSpec.model_validate({**self.model_dump(), **fields, "hyperparameters": hyperparameters})

    def watching_rules(self) -> list[dict[str, Any]]:
        """The rules that watch this run's jobs: its selection, else its framework's defaults."""
        return rule_selection.watching_rules(self.rules, self.framework)

    def with_rules(self, rules: list[dict[str, Any]]) -> RunSpec:
        return RunSpec.model_validate({**self.model_dump(), "rules": rules})

    def with_changes(self, changes: Mapping[str, Any]) -> RunSpec:
        return RunSpec.model_validate({**self.model_dump(), **dict(changes)})


def summarize_hyperparameters(hyperparameters: Mapping[str, HyperparameterValue], limit: int = 70) -> str:
    """'lr=0.1, grad_clip=0, epochs=3': whole name=value entries within ``limit`` characters, then how many more were
    left out ('(+3 more)'). Never a value cut short: 'hidden-units=1...' would read as a setting of 1."""
    entries = [f"{name}={remedies_contract.show(value)}" for name, value in hyperparameters.items()]
    text = ", ".join(entries)
    if not entries or len(text) <= limit:
        return text or "no hyperparameters"
    room = limit - len(f" (+{len(entries)} more)")
    shown: list[str] = []
    for entry in entries:
        if len(", ".join([*shown, entry])) > room:
            break
        shown.append(entry)
    if not shown:  # the first entry alone is longer than the room: it is cut, and says so with "..."
        shown = [clip(entries[0], max(room, 4))]
    return f"{', '.join(shown)} (+{len(entries) - len(shown)} more)" if len(shown) < len(entries) else ", ".join(shown)
