"""The differential harness's worker: runs a plan's corpus scripts and reads their output back, under whichever
``smdebug`` its interpreter imports (real smdebug 1.0.34 in .venv-smdebug-reference, ours in .venv).

    python differential_worker.py PLAN.json

Started once per interpreter: torch, smdebug and xgboost are imported once here (about 3.5 s for real smdebug), then
every script runs in a child forked from this process, so each one still runs as its own process would: its own
module state and hook singleton, and at its end the interpreter's normal exit (the atexit handlers smdebug relies on
to write a script's last step when the script never calls ``hook.close()``). A child ends as the interpreter ends a
process (non-daemon threads joined, atexit handlers run, stdio flushed) and then leaves with ``os._exit``, skipping
only the teardown of the ~2,000 modules torch brings (over a second per child). Then a second child reads the output back
with :mod:`differential_reader`. A live case forks the writer and the reader at once; an S3 case runs its scripts and
its reader in one child inside moto's in-process S3 (``mock_aws``), which a fork cannot share.

Standard library only at import (the reader module adds numpy); the plan and the results are JSON files.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
#: A child still running after this many seconds is killed and its case reported as timed out.
CHILD_TIMEOUT_SECONDS = 120


def _write_json(path: str, value) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(value, handle)
    os.replace(path + ".tmp", path)


def _preload(plan: dict) -> dict:
    """Import what every script imports, before forking (so each child starts warm); return which smdebug it is."""
    import numpy  # noqa: F401

    import smdebug
    import smdebug.exceptions  # noqa: F401
    import smdebug.rules.rule_invoker  # noqa: F401
    import smdebug.trials  # noqa: F401

    if plan.get("torch", True):
        import torch

        import smdebug.pytorch  # noqa: F401

        # torch.optim imports about 800 modules on first use (torch._dynamo, sympy): once here, not in every child.
        # Nothing here runs a parallel operation, so no thread pool exists to be lost in the fork.
        torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    if plan.get("xgboost", True):
        import xgboost  # noqa: F401

        import smdebug.xgboost  # noqa: F401
    return {
        "file": smdebug.__file__,
        "version": getattr(smdebug, "__version__", None),
        "ours": bool(getattr(smdebug, "REMEDIATION_DEBUGGER", False)),
        "python": sys.version.split()[0],
    }


def _redirect(log_path: str, stdout_path: str | None = None) -> None:
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 2)
    if stdout_path is None:
        os.dup2(log, 1)
    else:
        os.dup2(os.open(stdout_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)


def _exit_code(exit: SystemExit) -> int:
    code = exit.code
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def run_script(case: dict, run: dict) -> dict:
    """Run one script of the case as ``python SCRIPT ARGS`` would, in this process; what it ended with."""
    os.environ.update(case.get("env", {}))
    os.environ.update(run.get("env", {}))
    os.chdir(case["cwd"])
    script = os.path.join(case["folder"], run["script"])
    sys.path.insert(0, case["folder"])
    sys.argv = [script, *run.get("args", [])]
    result = {"script": run["script"], "exit": 0, "error": None}
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exit:
        result["exit"] = _exit_code(exit)
    except BaseException as exception:  # noqa: BLE001 - how a script ends is part of what is compared
        traceback.print_exc()
        result["exit"], result["error"] = 1, type(exception).__name__
    finally:
        sys.path.remove(case["folder"])
    return result


def read_back(case: dict) -> dict:
    import differential_reader

    from smdebug.trials import create_trial

    probe = case.get("probe", {})
    sys.path.insert(0, case["folder"])  # a rule's module lives beside the scripts
    try:
        trial = create_trial(case["trial_path"], **probe.get("create_trial", {}))
    except Exception as exception:  # noqa: BLE001
        traceback.print_exc()
        return differential_reader.error(exception)
    return differential_reader.describe(trial, probe)


def _child_run(case: dict, index: int) -> int:
    run = case["runs"][index]
    for path in run.get("remove", []):  # the reclaimed instance's local files: a restart does not find them
        if os.path.exists(path):
            os.remove(path)
    capture = os.path.join(case["dir"], f"stdout-{index}.txt") if run.get("capture") else None
    _redirect(os.path.join(case["dir"], "log.txt"), capture)
    result = run_script(case, run)
    _write_json(os.path.join(case["dir"], f"run-{index}.json"), result)
    return result["exit"]


def _child_read(case: dict) -> int:
    _redirect(os.path.join(case["dir"], "log.txt"))
    _write_json(os.path.join(case["dir"], "trial.json"), read_back(case))
    return 0


def _child_follow(case: dict) -> int:
    import differential_reader

    _redirect(os.path.join(case["dir"], "log.txt"))
    os.environ.update(case.get("env", {}))
    os.chdir(case["cwd"])
    try:
        found = differential_reader.follow(case["trial_path"], case["probe"]["follow"])
    except Exception as exception:  # noqa: BLE001
        traceback.print_exc()
        found = differential_reader.error(exception)
    _write_json(os.path.join(case["dir"], "follow.json"), found)
    return 0


def _child_s3(case: dict) -> int:
    """Every script of the case, then the reader, in one process inside moto's S3."""
    _redirect(os.path.join(case["dir"], "log.txt"))
    os.environ.update(case.get("env", {}))
    import boto3
    from moto import mock_aws

    with mock_aws():
        boto3.client("s3", region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1")).create_bucket(Bucket=case["bucket"])
        for index, run in enumerate(case["runs"]):
            capture = os.path.join(case["dir"], f"stdout-{index}.txt") if run.get("capture") else None
            if capture:
                saved = os.dup(1)
                os.dup2(os.open(capture, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 1)
            result = run_script(case, run)
            sys.stdout.flush()
            if capture:
                os.dup2(saved, 1)
            _write_json(os.path.join(case["dir"], f"run-{index}.json"), result)
        _write_json(os.path.join(case["dir"], "trial.json"), read_back(case))
    return 0


def _exit_as_python_does(code: int) -> None:
    """What the interpreter does at a process's end that a script can see, then leave."""
    threading._shutdown()  # the interpreter joins non-daemon threads first
    atexit._run_exitfuncs()  # smdebug closes a hook the script left open here
    gc.collect()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fork(target, *args) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            code = target(*args)
        except SystemExit as exit:
            code = _exit_code(exit)
        except BaseException:  # noqa: BLE001 - reported in the case's log
            traceback.print_exc()
            code = 1
        _exit_as_python_does(code)
    return pid


def _wait(pids: list[int], deadline: float) -> list[list]:
    """Each child's exit status (its exit code, "signal N" or "timeout") and the seconds it took."""
    started = time.monotonic()
    statuses: dict[int, int | str] = {}
    seconds: dict[int, float] = {}
    while len(statuses) < len(pids):
        for pid in pids:
            if pid in statuses:
                continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                statuses[pid] = os.waitstatus_to_exitcode(status)
                if isinstance(statuses[pid], int) and statuses[pid] < 0:
                    statuses[pid] = f"signal {-statuses[pid]}"
            elif time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                statuses[pid] = "timeout"
            if pid in statuses:
                seconds[pid] = round(time.monotonic() - started, 3)
        time.sleep(0.02)
    return [[statuses[pid], seconds[pid]] for pid in pids]


def main(plan_path: str) -> None:
    with open(plan_path, encoding="utf-8") as handle:
        plan = json.load(handle)
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != HERE]
    sys.path.append(HERE)  # the reader module, last: a script's own folder and site-packages come first
    sys.dont_write_bytecode = True  # nothing written into the corpus folders
    _write_json(plan["identity"], _preload(plan))
    gc.freeze()  # what the imports made is never collected: a child's collection skips it (half a second each)
    for case in plan["cases"]:
        os.makedirs(case["dir"], exist_ok=True)
        os.makedirs(case["cwd"], exist_ok=True)
        started = time.monotonic()
        deadline = started + CHILD_TIMEOUT_SECONDS
        statuses = []
        if case["kind"] == "s3":
            statuses += _wait([_fork(_child_s3, case)], deadline)
        elif case["kind"] == "live":
            # the training script, the analysis scripts that follow it ("during") and the reader's own follower at once
            during = [index for index, run in enumerate(case["runs"]) if index == 0 or run.get("during")]
            pids = [_fork(_child_run, case, index) for index in during]
            if "follow" in case.get("probe", {}):
                pids.append(_fork(_child_follow, case))
            statuses += _wait(pids, deadline)
            for index in range(len(case["runs"])):
                if index not in during:
                    statuses += _wait([_fork(_child_run, case, index)], deadline)
            statuses += _wait([_fork(_child_read, case)], deadline)
        else:
            for index in range(len(case["runs"])):
                statuses += _wait([_fork(_child_run, case, index)], deadline)
            statuses += _wait([_fork(_child_read, case)], deadline)
        _write_json(
            os.path.join(case["dir"], "done.json"),
            {"seconds": round(time.monotonic() - started, 3), "children": statuses},
        )


if __name__ == "__main__":
    main(sys.argv[1])
