"""History events and state transitions of the remediation state machine, counted from its ASL. Standard library only.

Step Functions writes a fixed set of history events for each state it runs (the
developer guide's HistoryEvent types): a Lambda task (``lambda:invoke``)
TaskStateEntered, TaskScheduled, TaskStarted, TaskSucceeded, TaskStateExited;
a callback task (``.waitForTaskToken``) TaskSubmitted besides; a Choice, Pass,
Wait or Succeed state its Entered and Exited events; a Fail state only
FailStateEntered; the execution ExecutionStarted and its end. A state
transition (what Standard workflows bill) is one state entered.

:func:`loop_costs` follows the ASL's own transitions along the loop's three parts
and returns what each costs; ``contracts.run_spec`` states the figures its bounds
use, and the tests check those against this count and against a real history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

EXECUTION_EVENTS = 2  # ExecutionStarted and the execution's end (Succeeded, Failed, TimedOut or Aborted)
_EVENTS_BY_TYPE = {"Choice": 2, "Pass": 2, "Wait": 2, "Succeed": 2, "Fail": 1, "Parallel": 2, "Map": 2}
_TASK_EVENTS = 5
_CALLBACK_TASK_EXTRA = 1  # TaskSubmitted

#: The loop's parts, as paths of the ASL (each step a transition the definition has).
MONITOR_PASS = ("WaitForJob", "Monitor", "AfterMonitor")
#: An attempt: its launch, and (after the passes that watch it) the plan that ends it.
ATTEMPT_PARTS = (("Train",), ("Plan", "AfterPlan"))
#: Before the loop, and the longest way out of it (a guardrail's Pass, the cleanup, the Fail state).
BEFORE_THE_LOOP = ("Initialize",)
LONGEST_WAY_OUT = ("MonitorLimitExceeded", "HandleFailure", "WorkflowFailed")


@dataclasses.dataclass(frozen=True)
class LoopCosts:
    events_per_monitor_pass: int
    events_per_attempt: int
    events_outside_the_loop: int
    transitions_per_monitor_pass: int
    transitions_per_attempt: int


def state_events(state: Mapping[str, Any]) -> int:
    """History events one run of ``state`` writes (no retries)."""
    kind = state["Type"]
    if kind == "Task":
        resource = str(state.get("Resource", ""))
        return _TASK_EVENTS + (_CALLBACK_TASK_EXTRA if resource.endswith(".waitForTaskToken") else 0)
    return _EVENTS_BY_TYPE[kind]


def successors(state: Mapping[str, Any]) -> set[str]:
    """Every state ``state`` can go to: Next, a Choice's branches and Default, a Catch's Next."""
    found = {state["Next"]} if "Next" in state else set()
    found |= {choice["Next"] for choice in state.get("Choices", [])}
    found |= {state["Default"]} if "Default" in state else set()
    found |= {catcher["Next"] for catcher in state.get("Catch", [])}
    return found


def path_events(definition: Mapping[str, Any], path: Sequence[str]) -> int:
    """History events of running the states of ``path`` in order; ValueError if the ASL has no such transition."""
    states = definition["States"]
    for here, there in zip(path, path[1:], strict=False):
        if there not in successors(states[here]):
            raise ValueError(f"the state machine has no transition {here} -> {there}")
    return sum(state_events(states[name]) for name in path)


def loop_costs(definition: Mapping[str, Any]) -> LoopCosts:
    states = definition["States"]
    # The parts are joined as the ASL joins them: Train waits for its job, a pass may plan, a plan relaunches.
    for here, there in (("Train", "WaitForJob"), ("AfterMonitor", "WaitForJob"), ("AfterMonitor", "Plan"),
                        ("AfterPlan", "Train"), ("Initialize", "Train"), ("AfterMonitor", "MonitorLimitExceeded")):
        if there not in successors(states[here]):
            raise ValueError(f"the state machine has no transition {here} -> {there}")
    return LoopCosts(
        events_per_monitor_pass=path_events(definition, MONITOR_PASS),
        events_per_attempt=sum(path_events(definition, part) for part in ATTEMPT_PARTS),
        events_outside_the_loop=EXECUTION_EVENTS
        + path_events(definition, BEFORE_THE_LOOP)
        + path_events(definition, LONGEST_WAY_OUT),
        transitions_per_monitor_pass=len(MONITOR_PASS),
        transitions_per_attempt=sum(len(part) for part in ATTEMPT_PARTS),
    )
