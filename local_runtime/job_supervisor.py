"""A local job's training processes, one per host: how they start, how they are watched until they end (the
StoppingCondition's MaxRuntimeInSeconds, the grace period after SIGTERM, a host that fails on its own), and how they
are stopped and killed. What each process is (the launcher, reaping, memory) is ``local_runtime.job_process``; its
hosts, ``local_runtime.job_hosts``."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from local_runtime.job_hosts import HostGroup
from local_runtime.job_process import LAUNCHER
from local_runtime.training_job import TrainingJobRecord

#: How often a job's processes are looked at (reaped, timed, signalled).
POLL_SECONDS = 0.2


def start_process(
    python: str, program: str, arguments: list[str], code_dir: Path, env: dict[str, str], log_path: Path
) -> subprocess.Popen:
    """``python program arguments`` (through the launcher) in ``code_dir``, in its own session, logging to
    ``log_path``."""
    log = open(log_path, "ab")
    try:
        return subprocess.Popen(
            [python, "-c", LAUNCHER, program, *arguments],
            cwd=code_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        log.close()


def kill_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)  # the job runs in its own session: pgid == pid
    except ProcessLookupError:
        pass


def watch(
    job: TrainingJobRecord,
    *,
    started: float,
    max_runtime: float | None,
    stop_grace_seconds: float,
    request_stop: Callable[[str], None],
    reclaim_due: Callable[[], bool] | None = None,
) -> bool:
    """Watch the job's host processes until every one has ended, then kill what they left in their groups. Returns
    whether the instance was reclaimed (a spot interruption): ``reclaim_due()`` said so while every host still ran
    and no stop was asked for, and the hosts' processes got SIGKILL, as a vanished instance's end: no grace period,
    no chance to clean up.

    Past ``max_runtime`` seconds since ``started`` (time.monotonic()) ``request_stop("MaxRuntimeExceeded")`` is called
    with the job's lock held. Once a stop was requested (which sends SIGTERM), or a host failed on its own and its
    peers outlived the grace period, the rest get SIGTERM, then SIGKILL ``stop_grace_seconds`` later."""
    group = HostGroup(job.hosts)
    term_sent_at: float | None = None
    failure_seen_at: float | None = None  # a host failed on its own: its peers get a grace period to end too
    reclaimed = False
    while True:
        group.poll()
        if group.all_ended:
            break
        time.sleep(POLL_SECONDS)
        now = time.monotonic()
        with job.lock:
            if job.stop_reason is None and max_runtime is not None and now - started > max_runtime:
                request_stop("MaxRuntimeExceeded")
            if job.stop_reason is not None and term_sent_at is None:
                term_sent_at = now
        if failure_seen_at is None and group.first_failure() is not None:
            failure_seen_at = now
        if term_sent_at is None and failure_seen_at is not None and now - failure_seen_at > stop_grace_seconds:
            # As SageMaker ends a job when one host's training fails: the peers that did not end are stopped.
            group.signal(signal.SIGTERM)
            term_sent_at = now
        if term_sent_at is not None and now - term_sent_at > stop_grace_seconds:
            group.signal(signal.SIGKILL)
        if reclaim_due is not None and not reclaimed and term_sent_at is None and failure_seen_at is None:
            if all(host.running for host in job.hosts) and reclaim_due():
                group.signal(signal.SIGKILL)
                reclaimed = True
    # The entry point may have left children in its groups: they end with the job.
    group.kill()
    # A job that ended on its own before the SIGKILL arrived was not interrupted.
    return reclaimed and any(host.exit_code == -signal.SIGKILL for host in job.hosts)


def seconds_with_a_process_running(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) intervals: wall seconds during which at least one of them ran."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total
