"""Run a corpus script as a training job runs it: in its own source directory, which holds the script's
folder and copies of smdebug/, debugger/ and contracts/ (what the job's source archive packs), with nothing
else of this repository importable (python -S: no site hooks, so not the editable install; third-party
packages come from site-packages through PYTHONPATH)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "smdebug_corpus"
PACKED = ("smdebug", "debugger", "contracts")


def source_dir(tmp_path: Path, folder: str) -> Path:
    """A fresh source directory: the corpus folder's files plus the packed packages."""
    target = tmp_path / f"src-{folder}"
    shutil.copytree(CORPUS / folder, target, ignore=shutil.ignore_patterns("__pycache__"))
    for package in PACKED:
        shutil.copytree(REPO / package, target / package, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def job_environment(**extra: str) -> dict[str, str]:
    site = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
    env.update(
        PYTHONPATH=os.pathsep.join(sorted(site)),
        PYTHONDONTWRITEBYTECODE="1",
        OMP_NUM_THREADS="1",
        DEBUG_OUTPUT_S3_SYNC="off",
    )
    env.update(extra)
    return env


def command(script: str, *args: str) -> list[str]:
    return [sys.executable, "-S", script, *args]


def run(src: Path, script: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        command(script, *args), cwd=src, env=env or job_environment(), capture_output=True, text=True, timeout=timeout
    )


def start(src: Path, script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        command(script, *args), cwd=src, env=env or job_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
