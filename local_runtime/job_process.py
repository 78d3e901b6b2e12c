"""A training job's process: how it starts (the launcher that ties it to the platform's life), how it is
reaped (its exit code and peak memory), and how memory reads in a failure text."""

from __future__ import annotations

import inspect
import os
import subprocess

from local_runtime import opt_ml_view

#: Runs first in each job process (single-threaded, before the entry point): SageMaker's /opt/ml paths made the
#: job's folders (local_runtime.opt_ml_view, whose source it carries: the job's Python imports nothing of the
#: project); on Linux it asks the kernel to SIGKILL the job if the platform's process dies without stopping it
#: (kill -9 of the CLI; asked after the namespace, whose new credentials would clear it), then execs the entry point
#: in the same process, so the job keeps its pid and process group.
LAUNCHER = inspect.getsource(opt_ml_view) + """
opt_ml_view_from_environment()
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
if sys.platform == "linux":
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != int(os.environ["LOCAL_TRAINING_PLATFORM_PID"]):
        os._exit(137)  # the platform died before prctl took effect
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


def reap(process: subprocess.Popen) -> tuple[int, int] | None:
    """(exit code as subprocess gives it, peak resident bytes) once the process has ended, else None.

    os.wait4 reaps the child with its resource usage, whose ru_maxrss (KiB on Linux) is the process's peak
    memory; subprocess learns the exit code from us. If another thread's poll() reaped it first, the exit
    code is subprocess's and the peak is what /proc showed while it ran."""
    if process.returncode is not None:
        return process.returncode, 0
    try:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
    except ChildProcessError:
        process.wait()
        return process.returncode, 0
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, usage.ru_maxrss * 1024


def peak_memory_so_far(pid: int) -> int:
    """VmHWM (the peak resident set so far) from /proc, in bytes; 0 where there is no /proc."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def format_bytes(value: int | None) -> str:
    if not value:
        return "unknown"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"
