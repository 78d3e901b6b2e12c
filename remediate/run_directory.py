"""The run directory: one per run, never shared, never overwritten.

A run claims its directory atomically. The default ``runs/<time>-<policy>``
is created with ``mkdir`` (no ``exist_ok``): if another run made that name in
the same second, this one takes ``<name>-2``, ``-3``, ... An explicit
``--run-dir`` must be new or an empty directory; the claim there is a marker
file created with ``O_EXCL``, so two runs given the same empty directory
cannot both have it.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

DEFAULT_RUNS_DIR = Path("runs")
#: Created in a run directory the moment a run claims it.
CLAIM_FILE = ".remediate-run"
MAX_SUFFIX = 10_000


class RunDirectoryError(ValueError):
    """The directory cannot hold a new run; the message names the path, what is there and the fix."""


def claim_run_dir(explicit: Path | None, policy: str, now: dt.datetime | None = None) -> Path:
    """A fresh directory for this run, created now (its parents too)."""
    if explicit is not None:
        return _claim_explicit(Path(explicit))
    base = DEFAULT_RUNS_DIR / f"{(now or dt.datetime.now()):%Y%m%d-%H%M%S}-{policy}"
    _make_parents(base.parent, "runs directory")
    for suffix in range(1, MAX_SUFFIX):
        candidate = base if suffix == 1 else base.with_name(f"{base.name}-{suffix}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue  # another run took this name (same second): the next suffix
        except OSError as error:
            raise RunDirectoryError(f"run directory {candidate}: cannot be created ({error.strerror or error})") from None
        _write_claim(candidate)
        return candidate
    raise RunDirectoryError(f"run directory {base}: {MAX_SUFFIX} runs already use this name; pass --run-dir")


def check_run_dir(explicit: Path) -> None:
    """What can be said before claiming: the path is not a file, and an existing directory is empty."""
    path = Path(explicit)
    where = f"--run-dir {path}"
    if path.exists() and not path.is_dir():
        raise RunDirectoryError(f"{where}: is a file; give a new directory (or an empty one) for the run's files")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise RunDirectoryError(f"{where}: {parent} is a file, so the directory cannot be made there")
            if not os.access(parent, os.W_OK | os.X_OK) and not path.exists():
                raise RunDirectoryError(f"{where}: {parent} is not writable (permission denied); choose another place")
            break
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise RunDirectoryError(f"{where}: is not writable (permission denied); choose another directory")
        entries = sorted(entry.name for entry in path.iterdir())
        if entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise RunDirectoryError(
                f"{where}: already holds files ({shown}); a run never writes over another: give a new directory"
            )


def _claim_explicit(path: Path) -> Path:
    check_run_dir(path)
    _make_parents(path.parent, f"--run-dir {path}")
    try:
        path.mkdir()
    except FileExistsError:
        pass  # an empty directory the user made: claimed by the marker below
    except OSError as error:
        raise RunDirectoryError(f"--run-dir {path}: cannot be created ({error.strerror or error})") from None
    try:
        _write_claim(path)
    except FileExistsError:
        raise RunDirectoryError(f"--run-dir {path}: another run has just claimed it; give a new directory") from None
    return path


def _make_parents(directory: Path, what: str) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise RunDirectoryError(f"{what} {directory}: a file is in the way; remove it or choose another place") from None
    except OSError as error:
        raise RunDirectoryError(f"{what} {directory}: cannot be created ({error.strerror or error})") from None


def _write_claim(directory: Path) -> None:
    descriptor = os.open(directory / CLAIM_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(f"pid {os.getpid()} at {dt.datetime.now().astimezone().isoformat(timespec='seconds')}\n")
