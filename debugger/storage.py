"""On-disk layout of the debug output, written so a reader never sees half a step.

    <out_dir>/rule-status.json          the rule-status document (contracts.rule_status)
    <out_dir>/steps/000000000012.npz    one file per saved step: every saved tensor of that step
    <out_dir>/metrics.jsonl             metrics recorded with Hook.record_metric, one JSON line each
    <out_dir>/training_job_end.ts       written at close: the run has ended

Each step file is written to a temporary name in the same directory and
renamed with ``os.replace`` (atomic on POSIX), so a reader listing ``steps/``
sees either the complete step or nothing, even if the writer is killed
mid-write. A step file is an uncompressed ``.npz`` whose ``__manifest__``
entry (JSON) maps each tensor name to its collections; tensors are read with
numpy alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

STEPS_DIR = "steps"
METRICS_FILE = "metrics.jsonl"
TRAINING_ENDED_FILE = "training_job_end.ts"
MANIFEST_KEY = "__manifest__"
STEP_FILE_SUFFIX = ".npz"


def step_file_name(step: int) -> str:
    return f"{step:012d}{STEP_FILE_SUFFIX}"


def step_from_file_name(name: str) -> int | None:
    if not name.endswith(STEP_FILE_SUFFIX) or name.startswith("."):
        return None
    stem = name[: -len(STEP_FILE_SUFFIX)]
    return int(stem) if stem.isdigit() else None


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """Yield a temporary file next to ``path``; on success it is renamed onto ``path`` (``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` via a temporary file in the same directory and ``os.replace``."""
    with atomic_file(path) as handle:
        handle.write(text.encode("utf-8"))


def encode_step(
    handle: BinaryIO, step: int, tensors: Mapping[str, np.ndarray], collections: Mapping[str, list[str]]
) -> None:
    """Write one step file (an uncompressed npz with a JSON manifest) to ``handle``."""
    manifest = {"step": step, "tensors": {name: collections[name] for name in tensors}}
    arrays = {name: np.asarray(value) for name, value in tensors.items()}
    np.savez(handle, **{MANIFEST_KEY: np.array(json.dumps(manifest))}, **arrays)


def write_step(
    out_dir: Path, step: int, tensors: Mapping[str, np.ndarray], collections: Mapping[str, list[str]]
) -> Path:
    path = out_dir / STEPS_DIR / step_file_name(step)
    with atomic_file(path) as handle:
        encode_step(handle, step, tensors, collections)
    return path


def read_step(path: Path, *, arrays: bool = True) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    """(tensor name -> collections, tensor name -> array) of one complete step file; no arrays when ``arrays`` is False."""
    with np.load(path, allow_pickle=False) as archive:
        manifest = json.loads(str(archive[MANIFEST_KEY]))
        values = {name: archive[name] for name in manifest["tensors"]} if arrays else {}
    return manifest["tensors"], values


def list_step_files(out_dir: Path) -> dict[int, Path]:
    directory = out_dir / STEPS_DIR
    if not directory.is_dir():
        return {}
    files = {}
    for entry in os.scandir(directory):
        step = step_from_file_name(entry.name)
        if step is not None:
            files[step] = Path(entry.path)
    return files


def append_metric(out_dir: Path, name: str, step: int, value: float) -> None:
    """One line per metric, written with a single ``write``; a reader ignores a line without its newline."""
    out_dir.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"name": name, "step": step, "value": _json_number(value)}) + "\n"
    with open(out_dir / METRICS_FILE, "a", encoding="utf-8") as handle:
        handle.write(line)


def read_metrics(out_dir: Path) -> list[dict]:
    path = out_dir / METRICS_FILE
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break  # being written right now
            record = json.loads(line)
            record["value"] = float(record["value"])
            records.append(record)
    return records


def _json_number(value: float) -> float | str:
    value = float(value)
    return value if np.isfinite(value) else str(value)


def mark_training_ended(out_dir: Path) -> Path:
    path = out_dir / TRAINING_ENDED_FILE
    atomic_write_text(path, "")
    return path
