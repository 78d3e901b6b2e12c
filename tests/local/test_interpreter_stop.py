"""A local run stopped at any moment (Ctrl-C, SIGTERM, the runtime closing) ends as a stopped execution does in AWS:
ABORTED, with the stop's cause in a history that reads back and ends with ExecutionAborted
(local_runtime/interpreter_stop.py). And the patch that makes it so holds as long as anyone needs it: the local
runtime and the workflow tests each hold it, possibly at once and from several threads."""

from __future__ import annotations

import threading

import pytest
from moto_stop_points import STOP_LANDS_INSIDE, stop_point

from local_runtime import interpreter_stop
from local_runtime.interpreter_stop import stops_as_in_aws
from local_runtime.runtime import STOP_ERROR, LocalRuntime, RuntimeOptions, local_execution_input


@pytest.mark.parametrize("moment", STOP_LANDS_INSIDE)
def test_a_local_run_stopped_while_a_state_is_evaluated_ends_aborted_with_the_stops_cause(
    tmp_path, monkeypatch, moment
):
    owner, method = stop_point(moment)
    original = getattr(owner, method)
    reached, stopped, went_on = threading.Event(), threading.Event(), threading.Event()

    def stop_lands_here(self, env, *args, **kwargs):
        if self.name != "Initialize" or stopped.is_set():
            return original(self, env, *args, **kwargs)
        reached.set()
        assert stopped.wait(300), "the test never stopped the execution"
        try:
            return original(self, env, *args, **kwargs)
        finally:
            went_on.set()

    monkeypatch.setattr(owner, method, stop_lands_here)
    with LocalRuntime(RuntimeOptions(run_dir=tmp_path / "run")) as runtime:
        runtime.start(local_execution_input(runtime.options))
        assert reached.wait(300), "the execution never reached its first state"
        runtime.stop_execution("interrupted from the local CLI")
        assert runtime.describe()["status"] == "ABORTED"  # at once, as in AWS
        stopped.set()  # the state in flight goes on with what it was doing, as its Lambda would in AWS
        assert went_on.wait(300), "the state in flight never went on"
        described, history = runtime.describe(), runtime.history()

    assert described["status"] == "ABORTED"
    assert history[-1]["type"] == "ExecutionAborted"
    assert history[-1]["executionAbortedEventDetails"] == {
        "error": STOP_ERROR,
        "cause": "interrupted from the local CLI",
    }
    assert not [event for event in history if event["type"] in ("TaskFailed", "ExecutionFailed", "TaskScheduled")]


def _moto_stop():
    from moto.stepfunctions.parser.backend.execution import Execution

    return Execution.stop


def test_the_patch_holds_until_its_last_holder_leaves_however_they_nest():
    moto_stop = _moto_stop()
    assert not interpreter_stop.installed()
    with stops_as_in_aws():
        patched = _moto_stop()
        assert patched is not moto_stop
        with stops_as_in_aws():  # e.g. a workflow test that also opens a LocalRuntime
            assert _moto_stop() is patched  # not patched twice (a stop would then record two ExecutionAborted)
        assert _moto_stop() is patched  # the inner exit left it in place
    assert _moto_stop() is moto_stop and not interpreter_stop.installed()


def test_the_patch_holds_while_holders_in_other_threads_overlap():
    """Holders that enter and leave in any order, from several threads (a LocalRuntime closed by another thread
    than the one that opened it): the patch stays until the last one leaves, and moto's own stop comes back."""
    moto_stop = _moto_stop()
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with stops_as_in_aws():
            first_in.set()
            second_in.wait(60)
        first_out.set()

    def second() -> None:
        first_in.wait(60)
        with stops_as_in_aws():
            second_in.set()
            first_out.wait(60)
            seen["after the first left"] = interpreter_stop.installed() and _moto_stop() is not moto_stop

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert seen == {"after the first left": True}
    assert _moto_stop() is moto_stop and not interpreter_stop.installed()


def test_a_local_runtime_inside_another_holder_leaves_the_patch_to_it(tmp_path):
    with stops_as_in_aws():
        patched = _moto_stop()
        with LocalRuntime(RuntimeOptions(run_dir=tmp_path / "run")):
            assert _moto_stop() is patched
        assert _moto_stop() is patched and interpreter_stop.installed()
    assert not interpreter_stop.installed()
