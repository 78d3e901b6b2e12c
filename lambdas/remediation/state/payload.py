"""The workflow's JSON state payload, as pydantic v2 models.

The payload keeps the AWS sample's shape (``{"state": {"history": ...,
"next_action": ..., "job_status": ..., "rule_status": ..., "run_spec": ...}}``)
and adds what the sample lacked: the policy and the declared remedies and
objective, the budgets, the Wait interval the ASL reads with ``SecondsPath``,
and a bounded list of attempts (the first one and the latest ones, with a count
of those dropped) so the payload stays far below Step Functions' 256 KiB.

A run_spec is what one training job runs: the user's script (``entry_point``
in ``source_dir``), its own ``hyperparameters``, the channels and metric
regexes, and the job settings. The bounds and patterns come from
``contracts.run_spec``; the execution input that becomes the first state is in
``lambdas.remediation.execution_input``.

Every model forbids unknown keys. Bad input raises ``InvalidState`` naming each
bad field. The models also work through Powertools' parser
(``aws_lambda_powertools.utilities.parser.parse(event=..., model=StatePayload)``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from contracts import objective as objective_contract
from contracts import run_spec as bounds
from contracts.conventional_hyperparameters import hyperparameter_kinds
from contracts.planned_epochs import planned_epochs
from lambdas.remediation.state.attempts import MAX_KEPT_ATTEMPTS, Attempt, bound_attempts
from lambdas.remediation.state.payload_fields import (
    MAX_NAME_BYTES,
    MAX_REASON_BYTES,
    MAX_STATUS_BYTES,
    STRICT,
    CapacityWait,
    Count,
    MonitorInterval,
    MonitorTransitions,
    ObjectiveJson,
    RetrainingBudget,
    RuleWait,
    Text,
)
from lambdas.remediation.state.run_spec import RunSpec
from lambdas.remediation.state.validation_messages import InvalidState, describe_validation_error

#: Step Functions' cap on a state's input/output, in bytes.
STEP_FUNCTIONS_PAYLOAD_LIMIT = 256 * 1024

NextAction = Literal["launch_new", "monitor", "end"]
PolicyName = Literal["evidence", "anchor", "declared"]

# --------------------------------------------------------------------------- history



class History(BaseModel):
    """The sample's counters (names kept), plus capacity retries and a count per changed hyperparameter."""

    model_config = STRICT

    num_warmup_adjustments: Count = 0
    num_batch_layer_adjustments: Count = 0
    num_retraining: Count = 0
    latest_job_name: str = ""
    num_learning_rate_adjustments: Count = 0
    num_monitor_transitions: Count = 0
    capacity_retries: Count = 0
    #: Monitor polls in a row whose AWS reads kept failing transiently (throttling): waited out, not acted on.
    consecutive_read_failures: Count = 0
    #: Looks at the latest (completed) job whose rules were still evaluating (at most contracts.run_spec.RULE_WAITS).
    rule_waits: Count = 0
    #: Instance-seconds the ended jobs used (InstanceCount x TrainingTimeInSeconds, else their reservation).
    instance_seconds_used: Count = 0
    num_hyperparameter_adjustments: Annotated[dict[str, Count], Field(max_length=bounds.MAX_CHANNELS * 5)] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _job_name(self) -> History:
        if self.latest_job_name:
            bounds.check_job_name(self.latest_job_name)
        return self


# --------------------------------------------------------------------------- workflow state


def _remedies_json(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError("remedies: must be a JSON object of rule name or failure kind: [remedies]")
    return value


class WorkflowState(BaseModel):
    """``$.state`` of the state machine: the sample's keys plus the declarations, budgets and attempts.
    Built from the execution input by ``lambdas.remediation.execution_input.initial_state``."""

    model_config = STRICT

    history: History = Field(default_factory=History)
    next_action: NextAction = "launch_new"
    job_status: Text(MAX_STATUS_BYTES) = "NotStarted"
    rule_status: Text(MAX_STATUS_BYTES) = "NotStarted"
    run_spec: RunSpec
    policy: PolicyName
    #: The remedies the planner may apply (``contracts.remedies`` JSON), checked against the starting
    #: hyperparameters when the execution starts.
    remedies: Annotated[dict[str, list[dict[str, Any]]], BeforeValidator(_remedies_json)] = Field(default_factory=dict)
    #: For a built-in remedy set (policy evidence or anchor): conventional hyperparameter name -> the script's.
    hyperparameter_names: Annotated[dict[str, Text(MAX_NAME_BYTES)], Field(max_length=32)] = Field(default_factory=dict)
    #: For a conventional name whose values the script spells its own way: conventional value -> the script's.
    hyperparameter_values: Annotated[
        dict[str, Annotated[dict[str, bool | int | float | Text(MAX_NAME_BYTES)], Field(max_length=16)]],
        Field(max_length=32),
    ] = Field(default_factory=dict)
    #: What the run_spec declares a hyperparameter to be, where its name and value would say otherwise
    #: (``contracts.hyperparameter_values.KINDS``).
    hyperparameter_kinds: Annotated[
        dict[str, Literal["integer", "real", "flag", "text"]], Field(max_length=bounds.MAX_HYPERPARAMETERS)
    ] = Field(default_factory=dict)
    #: The user's consent to remedies that change how the job computes the training loss (the debugger's loss
    #: settings, ``contracts.debugger_settings``); a remedy the user declares for one is consent to it.
    allow_loss_changes: bool = False
    #: Hyperparameters no remedy may change.
    fixed_hyperparameters: Annotated[list[Text(MAX_NAME_BYTES)], Field(max_length=bounds.MAX_HYPERPARAMETERS)] = Field(
        default_factory=list
    )
    objective: ObjectiveJson = None
    max_num_retraining: RetrainingBudget
    max_monitor_transitions: MonitorTransitions
    monitor_interval_seconds: MonitorInterval
    #: The stack's cost guardrail on the instance-seconds this execution may use (contracts.stack_guardrails), set
    #: when the execution starts; None without one (the local runtime).
    max_instance_seconds: Count | None = None
    #: The wait before a relaunch after a capacity shortage (the WaitBeforeRelaunch state's SecondsPath).
    capacity_wait_seconds: CapacityWait = bounds.DEFAULT_CAPACITY_WAIT_SECONDS
    #: The wait before looking again at a completed job's rules still evaluating (the WaitForRules state's
    #: SecondsPath); at most monitor_interval_seconds.
    rule_wait_seconds: RuleWait = bounds.DEFAULT_RULE_WAIT_SECONDS
    attempts: Annotated[list[Attempt], Field(max_length=MAX_KEPT_ATTEMPTS)] = Field(default_factory=list)
    attempts_dropped: Count = 0
    #: This execution's random secret, set at Initialize where the stack asks for it: each job's debug output and
    #: checkpoints go under a prefix derived from it and the job's name (job.job_identity.evidence_prefixes), which
    #: no other run's job can list or guess. Empty: the prefixes are named by the job alone.
    evidence_key: Annotated[str, Field(pattern=r"^([0-9a-f]{32})?$")] = ""
    end_reason: Text(MAX_REASON_BYTES) | None = None

    @model_validator(mode="after")
    def _rule_wait_within_the_poll(self) -> WorkflowState:
        if self.rule_wait_seconds > self.monitor_interval_seconds:
            raise ValueError(
                f"rule_wait_seconds: must be at most monitor_interval_seconds ({self.monitor_interval_seconds}); got "
                f"{self.rule_wait_seconds} (each wait is a monitor pass, bounded as one)"
            )
        return self

    @model_validator(mode="after")
    def _attempts_numbered_in_order(self) -> WorkflowState:
        numbers = [attempt.number for attempt in self.attempts]
        if numbers != sorted(set(numbers)):
            raise ValueError(f"attempts: numbers must increase strictly (got {numbers})")
        if numbers and numbers[-1] != len(numbers) + self.attempts_dropped:
            raise ValueError(
                f"attempts: the last attempt is number {numbers[-1]} but {len(numbers)} are kept and "
                f"{self.attempts_dropped} dropped; attempts_dropped must be {numbers[-1] - len(numbers)}"
            )
        return self

    # ----- reading

    @property
    def last_attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def attempt_count(self) -> int:
        """Attempts launched so far, dropped ones included."""
        return len(self.attempts) + self.attempts_dropped

    @property
    def max_attempts(self) -> int:
        """The launches the budget allows: max_num_retraining, as the AWS sample counts them (the first launch
        always happens, so 0 and 1 both mean one)."""
        return max(1, self.max_num_retraining)

    @property
    def retraining_budget_left(self) -> int:
        """Launches still allowed (num_retraining counts every launch, the first included, as in the sample)."""
        return max(0, self.max_num_retraining - self.history.num_retraining)

    @property
    def instance_seconds_left(self) -> int | None:
        """Instance-seconds the execution may still use under the stack's guardrail (None: no guardrail)."""
        if self.max_instance_seconds is None:
            return None
        return max(0, self.max_instance_seconds - self.history.instance_seconds_used)

    def declared_objective(self) -> objective_contract.Objective | None:
        return objective_contract.Objective.from_json(self.objective) if self.objective is not None else None

    def epochs_in(self, hyperparameters: Mapping[str, Any]) -> int | None:
        """The epochs these hyperparameters train, wherever the run_spec states them (``contracts.planned_epochs``:
        the name mapped to ``num_epochs``, the one a declared remedy sets to the best epoch, or a name that spells an
        epoch count); None when it states none, or its value is not a whole number."""
        return planned_epochs(hyperparameters, self.hyperparameter_names.get("num_epochs"), self.remedies)

    def kinds(self) -> dict[str, str]:
        """What each hyperparameter is (a whole number, a real number, a flag, text): declared, else what its
        conventional name means, else from its name and value (``contracts.conventional_hyperparameters``)."""
        names = {} if self.policy == "declared" else self.hyperparameter_names
        return hyperparameter_kinds(
            self.run_spec.hyperparameters, names, self.hyperparameter_kinds, self.hyperparameter_values
        )

    def job_settings(self) -> dict[str, Any]:
        """What the next job runs with, as remedies read and change it: the run_spec's hyperparameters and its
        debugger settings (``contracts.debugger_settings``)."""
        return {**self.run_spec.hyperparameters, **self.run_spec.debugger_settings()}

    # ----- writing (each returns a new, validated state)

    def with_new_attempt(
        self,
        job_name: str,
        resumed_from: str | None = None,
        resumed_checkpoint_files: int | None = None,
        resume_skipped: str | None = None,
        reserved_instance_seconds: int | None = None,
    ) -> WorkflowState:
        """Record that ``job_name`` was launched with the current run_spec (from ``resumed_from``'s checkpoints,
        when the last decision said so, or from step 0 for the reason ``resume_skipped``); the job is now
        monitored."""
        attempt = Attempt(
            number=self.attempt_count + 1,
            job_name=job_name,
            hyperparameters=dict(self.run_spec.hyperparameters),
            debugger_settings=self.run_spec.debugger_settings(),
            resumed_from=resumed_from,
            resumed_checkpoint_files=resumed_checkpoint_files,
            resume_skipped=resume_skipped,
            reserved_instance_seconds=reserved_instance_seconds,
        )
        attempts, dropped = bound_attempts([*self.attempts, attempt], self.attempts_dropped)
        # The AWS sample's train step counts every launch in num_retraining (its reference run ends at 7 after 7).
        history = self.history.model_copy(
            update={"latest_job_name": job_name, "num_retraining": self.history.num_retraining + 1, "rule_waits": 0}
        )
        return self.updated(
            attempts=attempts,
            attempts_dropped=dropped,
            history=history,
            next_action="monitor",
            job_status="InProgress",
            rule_status="InProgress",
        )

    def with_last_attempt(self, **changes: Any) -> WorkflowState:
        """Update fields of the latest attempt (outcome, rule_statuses, issue, evidence, decision, ...)."""
        if not self.attempts:
            raise InvalidState({"attempts": "is empty; launch a job (with_new_attempt) before updating it"})
        last = self.attempts[-1].model_dump()
        last.update({key: _plain(value) for key, value in changes.items()})
        return self.updated(attempts=[*self.attempts[:-1], Attempt.model_validate(last)])

    def updated(self, **changes: Any) -> WorkflowState:
        """A validated copy with ``changes`` applied (model_copy alone would skip validation)."""
        data = self.model_dump()
        data.update({key: _plain(value) for key, value in changes.items()})
        return WorkflowState.model_validate(data)

    def to_payload(self) -> dict[str, Any]:
        """``{"state": ...}`` as strict JSON values (NaN and infinities as the strings pydantic reads back)."""
        return {"state": json.loads(self.model_dump_json())}


class StatePayload(BaseModel):
    """The event each handler receives: ``{"state": WorkflowState}``. Other top-level keys are ignored
    (the ASL may carry e.g. a Catch's error next to the state)."""

    model_config = ConfigDict(extra="ignore")

    state: WorkflowState


def payload_size(state: WorkflowState) -> int:
    """Bytes of the ``{"state": ...}`` JSON, ASCII-escaped as Python's json (and Lambda's runtime) writes it."""
    return len(json.dumps(state.to_payload()).encode("utf-8"))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def parse_state(event: Mapping[str, Any]) -> WorkflowState:
    """``event["state"]`` as a WorkflowState, for the handlers. Raises InvalidState naming each bad field."""
    if not isinstance(event, Mapping):
        raise InvalidState({"(event)": f"must be a JSON object with a 'state' key (got {type(event).__name__})"})
    try:
        return StatePayload.model_validate(dict(event)).state
    except ValidationError as error:
        raise InvalidState(describe_validation_error(error)) from None
