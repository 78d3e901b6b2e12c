"""Randomised fault schedules over whole executions (fault_harness.py), by seed: what each execution's jobs do, which
AWS calls and Lambda invokes fail and how, how the jobs' state changes arrive, and whether (and where) the execution
is stopped. Used by tests/workflow/test_fault_injection.py (a bounded number of seeds in `make test`) and by
bench/fault_injection.py (as many as you ask for).

Each execution is checked against the product's promises after it (fault_harness.check_invariants); the figures
(executions, faults injected, violations) are what the bench prints.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

from fault_harness import FaultHarness, FaultSchedule, check_invariants
from workflow_harness import (
    BASE_INPUT,
    Tick,
    Workflow,
    completed,
    current_actor,
    failed,
    issues_found,
    running,
    stopped,
)

#: What one job does, by name; "healthy" jobs complete with every rule quiet and the objective met: a workflow that
#: stops one while its execution runs has broken a promise, whatever fault it met.
STORIES: dict[str, Callable[[random.Random], list[Tick]]] = {
    "healthy": lambda rng: [running()] * rng.randint(0, 1) + [completed(after_seconds=rng.choice((0.0, 0.2)))],
    "explodes": lambda rng: [running()] * rng.randint(0, 1) + [issues_found("ExplodingTensor", step=rng.randint(1, 9))],
    "vanishes": lambda rng: [issues_found("VanishingGradient", step=rng.randint(5, 40), initial_gradient_norm=1e-6)],
    "no_capacity": lambda rng: [failed("CapacityError: Unable to provision requested ML compute capacity.")],
    "code_fails": lambda rng: [failed("AlgorithmError: ExecuteUserScriptError: ExitCode 1 RuntimeError: shape mismatch")],
    "misses_objective": lambda rng: [completed(test_accuracy=0.5)],
    "rule_in_error": lambda rng: [completed(errors=("VanishingGradient",))],
    "out_of_time": lambda rng: [stopped("MaxRuntimeExceeded")],
    "stopped_by_someone": lambda rng: [stopped()],
}
HEALTHY = "healthy"
#: Where an execution may be stopped: a handler, and the moment (before it, before one of its calls, after it).
ABORT_POINTS = (
    ("plan", "before", 1),  # Initialize
    ("train", "before", 1),
    ("train", "CreateTrainingJob", 1),
    ("train", "after", 1),
    ("job_events", "before", 1),
    ("job_events", "after", 1),
    ("monitor", "before", 1),
    ("monitor", "DescribeTrainingJob", 1),
    ("monitor", "StopTrainingJob", 1),
    ("monitor", "after", 1),
    ("plan", "before", 2),  # the first Plan after an attempt
    ("plan", "after", 2),
    ("train", "before", 2),
    ("train", "CreateTrainingJob", 2),
    ("job_events", "before", 2),
    ("monitor", "before", 2),
)
FAULT_RATES = (0.05, 0.1, 0.2)


@dataclasses.dataclass(frozen=True)
class Burst:
    """One fault held long enough to outlast a retry budget: ``times`` faults in a row of ``kind`` on one
    ``service``/``operation`` (a Lambda invoke: of ``function``), from its ``skip``-th call on."""

    name: str
    service: str
    operation: str
    kind: str
    times: int
    function: str | None = None
    skip: int = 0


#: Each retry budget of the stack, and a burst that outlasts it (statemachine/remediation.asl.json, the handlers):
#: * a Lambda invoke: Lambda.* is retried 10 times (11 tries) on every task, the wait's Catch falls back to Monitor;
#: * an AWS call: AwsTransientError is retried 6 times (7 tries);
#: * the account's instance quota at launch: TrainingCapacityUnavailable is retried 5 times (6 tries);
#: * the monitor's reads: 20 polls in a row wait (MAX_CONSECUTIVE_READ_FAILURES), then AwsTransientError's 6 retries;
#: * the execution-cleanup: 8 tries in each of Lambda's 3 asynchronous attempts, then the dead-letter queue.
BURSTS = (
    Burst("train invoke", "lambda", "Invoke", "throttle", 11, function="train"),
    Burst("monitor invoke", "lambda", "Invoke", "server_error", 11, function="monitor"),
    Burst("plan invoke", "lambda", "Invoke", "throttle", 11, function="plan", skip=1),  # after Initialize
    Burst("wait invoke", "lambda", "Invoke", "throttle", 11, function="job-events"),
    Burst("launch call", "sagemaker", "CreateTrainingJob", "server_error", 7),
    Burst("account quota", "sagemaker", "CreateTrainingJob", "quota", 6),
    Burst("monitor reads", "sagemaker", "DescribeTrainingJob", "throttle", 21 + 7),
    Burst("cleanup reads", "sfn", "GetExecutionHistory", "throttle", 8 * 3),
)


@dataclasses.dataclass
class Drawn:
    """One execution's draw."""

    seed: int
    stories: list[str]
    fault_rate: float
    late_seconds: float
    duplicate: bool
    reorder: bool
    abort: tuple[str, str, int] | None
    execution_input: dict[str, Any]
    burst: Burst | None = None


@dataclasses.dataclass
class Outcome:
    seed: int
    status: str
    error: str | None
    faults: int
    violations: list[str]
    drawn: Drawn
    #: The drawn stop happened (a stop drawn at a moment the execution never reached did not).
    stopped: bool = False

    def line(self) -> str:
        return (
            f"seed {self.seed}: {self.status} {self.error or ''} faults={self.faults} stories={self.drawn.stories} "
            f"rate={self.drawn.fault_rate} abort={self.drawn.abort} stopped={self.stopped} "
            f"burst={self.drawn.burst.name if self.drawn.burst else None} late={self.drawn.late_seconds} "
            f"duplicate={self.drawn.duplicate} reorder={self.drawn.reorder}"
        )


def draw(seed: int, abort_share: float = 0.35, burst_share: float = 0.25) -> Drawn:
    rng = random.Random(seed)
    count = rng.randint(1, 3)
    stories = [rng.choice(list(STORIES)) for _ in range(count - 1)] + [rng.choice((HEALTHY, HEALTHY, *STORIES))]
    return Drawn(
        seed=seed,
        stories=stories,
        fault_rate=rng.choice(FAULT_RATES),
        late_seconds=rng.choice((0.0, 0.0, 0.3, 1.2)),
        duplicate=rng.random() < 0.3,
        reorder=rng.random() < 0.2,
        abort=rng.choice(ABORT_POINTS) if rng.random() < abort_share else None,
        execution_input={**BASE_INPUT, "max_num_retraining": 4},
        # drawn last: the draws above stay what they were for every seed
        burst=rng.choice(BURSTS) if rng.random() < burst_share else None,
    )


def run_drawn(workflow: Workflow, faults: FaultHarness, drawn: Drawn, timeout: float = 120.0) -> Outcome:
    """Run one drawn execution on ``workflow`` (its own moto account, reused) and check the promises after it."""
    rng = random.Random(drawn.seed * 7919 + 1)
    timelines = [STORIES[story](rng) for story in drawn.stories]
    sagemaker = workflow.script(*timelines)
    sagemaker.default_timeline = STORIES[HEALTHY](rng)
    faults.schedule = FaultSchedule(seed=drawn.seed, rate=drawn.fault_rate, max_in_a_row=2)
    if drawn.burst is not None:
        burst = drawn.burst
        when = None
        if burst.function is not None:
            when = lambda call, name=burst.function: call.params["FunctionName"].endswith(f"function:remediation-{name}")  # noqa: E731
        elif burst.operation == "DescribeTrainingJob":
            when = lambda call: current_actor() == "monitor"  # noqa: E731 - the monitor's reads, not the wait's
        faults.schedule.add(burst.service, burst.operation, burst.kind, times=burst.times, skip=burst.skip, when=when)
    faults.events.late_seconds, faults.events.duplicate, faults.events.reorder = (
        drawn.late_seconds,
        drawn.duplicate,
        drawn.reorder,
    )
    faults.aborts = [] if drawn.abort is None else []
    if drawn.abort is not None:
        faults.abort(*drawn.abort)
    injected_before = len(faults.injected)
    arn = workflow.start(drawn.execution_input)
    described = workflow.wait(arn, timeout=timeout)
    faults.settle(arn)
    described = workflow.sfn.describe_execution(executionArn=arn)
    healthy = {
        request["TrainingJobName"]
        for index, request in enumerate(sagemaker.created)
        if index >= len(drawn.stories) or drawn.stories[index] == HEALTHY
    }
    stopped = drawn.abort is not None and any(planned.stopped for planned in faults.aborts)
    violations = check_invariants(workflow, faults, described, healthy_jobs=healthy, aborted=stopped)
    return Outcome(
        seed=drawn.seed,
        status=described["status"],
        error=described.get("error"),
        faults=len(faults.injected) - injected_before,
        violations=violations,
        drawn=drawn,
        stopped=stopped,
    )


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    statuses: dict[str, int] = {}
    for outcome in outcomes:
        key = outcome.status if outcome.status != "FAILED" else f"FAILED:{outcome.error}"
        statuses[key] = statuses.get(key, 0) + 1
    return {
        "executions": len(outcomes),
        "faults_injected": sum(outcome.faults for outcome in outcomes),
        "stops_drawn": sum(1 for outcome in outcomes if outcome.drawn.abort is not None),
        "executions_stopped_on_purpose": sum(1 for outcome in outcomes if outcome.stopped),
        "bursts_drawn": sum(1 for outcome in outcomes if outcome.drawn.burst is not None),
        "invariant_violations": sum(len(outcome.violations) for outcome in outcomes),
        "violations": [f"{outcome.line()}: {violation}" for outcome in outcomes for violation in outcome.violations],
        "ends": dict(sorted(statuses.items())),
    }
