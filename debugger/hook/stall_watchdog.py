"""StalledTrainingRule's watchdog: a thread of the hook that notices when no step has come for the rule's
``threshold`` seconds.

The rules run on the training thread, and a stalled job is one whose training thread is stuck (a deadlocked
DataLoader worker, a hung collective), so the rule cannot fire from there. The watchdog fires it: it records the
issue in the rule-status document (IssuesFound, the last step, the seconds stalled) and, when the rule stops
training (``stop_training_on_fire`` or a StopTraining action), ends the job as a StopTraining stop ends it: the
failure text ``StopTraining: rule StalledTrainingRule found an issue at step N: ...`` in the failure file and
exit code 3, so the local runtime and SageMaker both see a job stopped by the rule. The training thread is
blocked and cannot raise, so the watchdog ends the process itself (``os._exit``) after writing what matters.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable

from contracts.job import EXIT_RULE_STOP
from contracts.rule_status import IN_PROGRESS, NO_ISSUES_FOUND, RULE_STATUS_FILE, ActionRecord
from debugger.hook.failure_file import FailureFile
from debugger.hook.rule_runner import _now, _RuleState
from debugger.hook.stop_training import StopTrainingRequested
from debugger.rules.training_rules import StalledTrainingRule
from debugger.storage import layout

LOGGER = logging.getLogger("debugger.hook")
#: After this many seconds of writing the last steps and the status, the process ends anyway (a disk or S3
#: upload that hangs must not keep a stalled job alive).
FINAL_WRITE_SECONDS = 5.0


class StallWatchdog:
    """Watches the hook's StalledTrainingRule(s). ``exit_process`` ends the process (``os._exit``; tests that
    run a hook in their own process replace it)."""

    def __init__(self, hook, states: list[_RuleState], exit_process: Callable[[int], None] = os._exit):
        self.hook = hook
        self.states = states
        self.exit_process = exit_process
        shortest = min(state.rule.threshold for state in states)
        self._poll = min(1.0, max(0.05, shortest / 10))
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="debugger-stall-watchdog", daemon=True)
        self._thread.start()

    @classmethod
    def for_hook(cls, hook) -> StallWatchdog | None:
        """A running watchdog when the hook has a StalledTrainingRule configured, else None."""
        states = [state for state in hook._rules if isinstance(state.rule, StalledTrainingRule)]
        return cls(hook, states) if states else None

    def note_progress(self, step: int | None = None) -> None:
        for state in self.states:
            state.rule.note_progress(step)

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stopped.wait(self._poll):
            watching = [state for state in self.states if state.status == IN_PROGRESS]
            if not watching:
                return
            for state in watching:
                state.rule.finding = None
                if state.rule.check_stalled():
                    self._fire(state)

    def _fire(self, state: _RuleState) -> None:
        hook, rule = self.hook, state.rule
        # RuleIssue.step and the failure text name a step: before the first one, step 0 is where it stalled
        step = rule.last_step if rule.last_step is not None else 0
        hook._record_issue(state, step, None)
        stop_action = any(action["name"] == "StopTraining" for action in state.spec.actions)
        if not (stop_action or rule.stops(hook.job_name)):
            hook.write_status()  # the monitor reads IssuesFound and stops the job
            LOGGER.warning("rule %s: %s", state.spec.name, state.details)
            return
        if not stop_action:  # stop_training_on_fire: the stop is the rule's own action
            hook.actions.append(ActionRecord(action="StopTraining", rule=state.spec.name, step=step, at=_now(), detail=state.details))
        stop = StopTrainingRequested(state.spec.name, step, state.details)
        hook._stop = hook._stop or stop  # should the training thread wake up, it stops at its next check
        hook.write_status()
        FailureFile(os.environ).write(str(stop), unless_written=False)
        self._end_process()

    def _end_process(self) -> None:
        """Write the last steps and the final status (bounded by FINAL_WRITE_SECONDS), then end the process."""
        deadline = threading.Timer(FINAL_WRITE_SECONDS, self.exit_process, (EXIT_RULE_STOP,))
        deadline.daemon = True
        deadline.start()
        try:
            _finish_output(self.hook)
        except Exception as error:  # noqa: BLE001 - the stop matters more than the last files
            LOGGER.warning("debugger output after the stall was not finished: %s", error)
        finally:
            deadline.cancel()
            self._stopped.set()
            sys.stdout.flush()
            sys.stderr.flush()
            self.exit_process(EXIT_RULE_STOP)


def _finish_output(hook) -> None:
    """What ``Hook.close(training_ended=True)`` writes after a rule stop, without touching the blocked training
    thread's open step: the queued step files, the collections, the final status, the end marker, the S3 copy."""
    hook._writer.flush()
    hook._write_collections()
    for state in hook._rules:
        if state.status == IN_PROGRESS:
            state.status, state.details, state.modified = NO_ISSUES_FOUND, "", _now()
    hook.write_status(training_ended=True)
    extra = [hook.out_dir / RULE_STATUS_FILE, hook.out_dir / layout.METRICS_FILE, hook.out_dir / layout.COLLECTIONS_FILE]
    if not hook.dry_run:
        extra.append(layout.mark_training_ended(hook.out_dir))
    if hook.mirror is not None:
        hook.mirror.close(extra)
