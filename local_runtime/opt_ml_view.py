"""SageMaker's /opt/ml paths, each a local job's own folder, in the job's process.

SageMaker documents a training job's storage by path (the developer guide's "SageMaker Environment Variables and
Default Paths for Training Storage Folders"): channels under ``/opt/ml/input/data/<channel>``, the model in
``/opt/ml/model``, outputs in ``/opt/ml/output``, the code in ``/opt/ml/code``, and checkpoints in
``/opt/ml/checkpoints`` (CheckpointConfig's LocalPath by default), which has no environment variable: a script written
for SageMaker names that path itself. A local job's folders are elsewhere (``jobs/<job>/`` and the bucket mirror's
``checkpoints/<job>/``), so on Linux the job's process gets a mount namespace of its own in which ``/opt/ml`` is its
job's: each path bound to the folder the platform keeps for it. Nothing outside the job sees that view, and nothing
is written outside the run directory. Where the kernel refuses (not Linux, user namespaces switched off) the job runs
without it and its log's first lines say so and where to look instead.

Runs in the job's process before the entry point (``local_runtime.job_process.LAUNCHER`` carries this module's
source): standard library only, no import of the project.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

#: The job's environment variable carrying {SageMaker's path: the local folder bound there} (JSON), and the empty
#: folder the new /opt is built in; the launcher removes both before the entry point runs.
MOUNTS_ENV = "LOCAL_OPT_ML_MOUNTS"
STAGING_ENV = "LOCAL_OPT_ML_STAGING"
OPT = "/opt"
OPT_ML = "/opt/ml"
#: What the log says when the view could not be made.
FALLBACK_HINT = (
    "find the checkpoint directory in TRAINING_CHECKPOINT_DIR (or the LocalPath of the file CHECKPOINT_CONFIG_FILE_PATH "
    "names), the model directory in SM_MODEL_DIR, the channels in SM_CHANNEL_<NAME>"
)

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18


def opt_ml_mounts(
    job_dir: str | os.PathLike, host_dir: str | os.PathLike, checkpoints: str | os.PathLike
) -> dict[str, str]:
    """SageMaker's documented paths -> the local folders of one host of a job (``host_dir``: the job folder for the
    first host, ``hosts/<host>`` for the others, which share the job's channels and code)."""
    return {
        f"{OPT_ML}/input/config": os.fspath(os.path.join(host_dir, "input", "config")),
        f"{OPT_ML}/input/data": os.fspath(os.path.join(job_dir, "input", "data")),
        f"{OPT_ML}/model": os.fspath(os.path.join(host_dir, "model")),
        f"{OPT_ML}/output": os.fspath(os.path.join(host_dir, "output")),
        f"{OPT_ML}/code": os.fspath(os.path.join(job_dir, "code")),
        f"{OPT_ML}/checkpoints": os.fspath(checkpoints),
    }


def enter_opt_ml_view(mounts: dict[str, str], staging: str) -> str | None:
    """Give this process (and what it starts) a private /opt whose ``ml`` holds ``mounts`` and whose other entries
    are the machine's own. None when done, else why not (the process's view of the files is then unchanged: /opt is
    replaced last, in one mount)."""
    if not sys.platform.startswith("linux"):
        return f"mount namespaces are Linux's ({sys.platform} has none)"
    if not os.path.isdir(OPT):
        return f"this machine has no {OPT} directory to place ml in"
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    # root may have a mount namespace alone; anyone may have one inside a user namespace of their own
    choices = ([_CLONE_NEWNS] if uid == 0 else []) + [_CLONE_NEWNS | _CLONE_NEWUSER]
    for flags in choices:
        if libc.unshare(flags) == 0:
            break
    else:
        error = ctypes.get_errno()
        return f"the kernel refused a mount namespace ({os.strerror(error)})"
    try:
        if flags & _CLONE_NEWUSER:  # the same user inside the namespace: files keep their owner
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        _mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE)
        _mount(libc, "tmpfs", staging, "tmpfs", 0, "mode=0755")
        for entry in sorted(os.listdir(OPT)):
            if entry != "ml":
                _keep(libc, os.path.join(OPT, entry), os.path.join(staging, entry))
        for target, source in mounts.items():
            place = os.path.join(staging, os.path.relpath(target, OPT))
            os.makedirs(place, exist_ok=True)
            os.makedirs(source, exist_ok=True)
            _mount(libc, source, place, None, _MS_BIND | _MS_REC)
        _mount(libc, staging, OPT, None, _MS_BIND | _MS_REC)
    except OSError as error:
        return f"{error.filename or 'a mount'}: {error.strerror or error}"
    return None


def _keep(libc, source: str, place: str) -> None:
    """One entry of the machine's /opt, as it is, in the new one."""
    if os.path.islink(source):
        os.symlink(os.readlink(source), place)
    elif os.path.isdir(source):
        os.mkdir(place)
        _mount(libc, source, place, None, _MS_BIND | _MS_REC)
    elif os.path.isfile(source):
        open(place, "w").close()
        _mount(libc, source, place, None, _MS_BIND)


def _mount(libc, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encoded = [None if text is None else text.encode() for text in (source, target, fstype, data)]
    if libc.mount(encoded[0], encoded[1], encoded[2], ctypes.c_ulong(flags), encoded[3]) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error), target)


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def opt_ml_view_from_environment() -> None:
    """The launcher's step: the view the platform asked for (``MOUNTS_ENV``), or a line in the job's log saying why
    the job runs without it."""
    requested, staging = os.environ.pop(MOUNTS_ENV, None), os.environ.pop(STAGING_ENV, None)
    if not requested or not staging:
        return
    reason = enter_opt_ml_view(json.loads(requested), staging)
    if reason is not None:
        print(f"local platform: {OPT_ML} is not this job's folders here ({reason}); {FALLBACK_HINT}", file=sys.stderr,
              flush=True)  # fmt: skip
