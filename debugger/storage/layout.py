"""On-disk layout of the debug output, written so a reader never sees half a step.

    <out_dir>/rule-status.json          the rule-status document (contracts.rule_status)
    <out_dir>/steps/000000000012.npz    one file per saved step: every saved tensor of that step
    <out_dir>/metrics.jsonl             metrics recorded with Hook.record_metric, one JSON line each
    <out_dir>/collections.json          the hook's collections (trial.collections())
    <out_dir>/silent_tensors.json       tensors that cannot show a rule's problem, and why (debugger.rules.tensor_signal)
    <out_dir>/training_job_end.ts       written at close: the run has ended

Each step file is written to a temporary name in the same directory and
renamed with ``os.replace`` (atomic on POSIX), so a reader listing ``steps/``
sees either the complete step or nothing, even if the writer is killed
mid-write. A step file is an uncompressed ``.npz`` whose ``__manifest__``
entry (JSON) holds the step's mode and mode step, each tensor's collections,
the reductions saved (smdebug's ReductionConfig) and shapes; full tensors are
npz entries, read with numpy alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import struct
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np

from contracts.debug_output import (  # noqa: F401 - the step files' names are shared with the local runtime
    STEP_FILE_SUFFIX,
    STEPS_DIR,
    step_file_name,
    step_from_file_name,
)

METRICS_FILE = "metrics.jsonl"
TRAINING_ENDED_FILE = "training_job_end.ts"
#: The hook's collections (names, patterns, save and reduction configurations), for ``trial.collections()``.
COLLECTIONS_FILE = "collections.json"
#: The tensors the hook found cannot carry a training signal (frozen parameters, biases a normalization removes).
SILENT_TENSORS_FILE = "silent_tensors.json"
MANIFEST_KEY = "__manifest__"


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


@dataclasses.dataclass
class StepManifest:
    """What one step file holds: the step (global, its mode and mode step) and, per tensor, its collections;
    ``arrays`` names the tensors saved in full, ``reductions`` the reductions saved per tensor, ``shapes``
    the shapes saved per tensor."""

    step: int
    mode: str
    mode_step: int
    membership: dict[str, list[str]]
    arrays: list[str]
    reductions: dict[str, dict[str, float]]
    shapes: dict[str, list[int]]
    #: Tensors stored as a slice of a packed entry (one flat array holding many tensors of one dtype):
    #: name -> [entry, offset, shape]. The others in ``arrays`` are entries of their own.
    packed: dict[str, list] = dataclasses.field(default_factory=dict)

    def entries(self) -> list[str]:
        """The npz entries besides the manifest: unpacked tensors, then the packed arrays."""
        own = [name for name in self.arrays if name not in self.packed]
        return own + list(dict.fromkeys(entry for entry, _, _ in self.packed.values()))

    def to_json(self) -> str:
        reductions = {
            name: {key: _json_number(value) for key, value in values.items()} for name, values in self.reductions.items()
        }
        return json.dumps(
            {
                "step": self.step,
                "mode": self.mode,
                "mode_step": self.mode_step,
                "tensors": {name: self.membership[name] for name in self.arrays},
                "collections": self.membership,
                "reductions": reductions,
                "shapes": self.shapes,
                "packed": self.packed,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> StepManifest:
        data = json.loads(text)
        arrays = list(data["tensors"])
        # Step files written before modes were recorded: every tensor saved in full, mode GLOBAL.
        membership = data.get("collections") or dict(data["tensors"])
        return cls(
            step=int(data["step"]),
            mode=data.get("mode", "GLOBAL"),
            mode_step=int(data.get("mode_step", data["step"])),
            membership=membership,
            arrays=arrays,
            reductions={
                name: {key: float(value) for key, value in values.items()}
                for name, values in data.get("reductions", {}).items()
            },
            shapes={name: list(shape) for name, shape in data.get("shapes", {}).items()},
            packed={name: list(place) for name, place in data.get("packed", {}).items()},
        )


def encode_step(handle: BinaryIO, manifest: StepManifest, arrays: Mapping[str, np.ndarray]) -> None:
    """Write one step file to ``handle``: an uncompressed npz (a zip of .npy entries) with a JSON manifest.

    Written here rather than with ``np.savez``: the same format (np.load reads it), with a fraction of the
    Python work per array. The hook writes steps from a background thread, and every bit of Python it runs
    there holds the GIL the training thread needs."""
    entries = [(MANIFEST_KEY, np.array(manifest.to_json()))]
    entries += [(name, np.asarray(arrays[name])) for name in manifest.entries()]
    central = []
    offset = 0
    for name, array in entries:
        record, size = _zip_entry(name + ".npy", array, offset, handle)
        central.append(record)
        offset += size
    directory = b"".join(central)
    handle.write(directory)
    handle.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central), len(directory), offset, 0))


#: The date and time stamped on every zip entry (1980-01-01 00:00, the format's epoch).
_ZIP_DATE, _ZIP_TIME = (0 << 9) | (1 << 5) | 1, 0


def _npy_header(array: np.ndarray) -> bytes:
    descr = np.lib.format.dtype_to_descr(array.dtype)
    header = "{'descr': " + repr(descr) + ", 'fortran_order': False, 'shape': " + repr(array.shape) + ", }"
    # magic (6) + version (2) + length (2) + header + newline, padded to a multiple of 64 as numpy does
    padding = 64 - (10 + len(header) + 1) % 64
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header) + padding + 1) + header.encode("latin1") + b" " * padding + b"\n"


def _zip_entry(name: str, array: np.ndarray, offset: int, handle: BinaryIO) -> tuple[bytes, int]:
    """Write one stored (uncompressed) zip entry holding ``array`` as .npy; return (its central directory
    record, bytes written)."""
    array = array if array.flags.c_contiguous else array.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
    header = _npy_header(array)
    data = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
    size = len(header) + data.nbytes
    if size >= 0xFFFFFFFF:
        raise ValueError(f"{name} is {size} bytes: a step file holds tensors below 4 GiB")
    crc = zlib.crc32(data, zlib.crc32(header))
    encoded = name.encode("utf-8")
    fields = (20, 0, 0, _ZIP_TIME, _ZIP_DATE, crc, size, size, len(encoded))
    local = struct.pack("<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 0, _ZIP_TIME, _ZIP_DATE, crc, size, size, len(encoded), 0)
    handle.write(local)
    handle.write(encoded)
    handle.write(header)
    handle.write(data)
    record = struct.pack("<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, *fields[:2], 0, *fields[2:], 0, 0, 0, 0, 0, offset) + encoded
    return record, len(local) + len(encoded) + size


def write_step(out_dir: Path, manifest: StepManifest, arrays: Mapping[str, np.ndarray]) -> Path:
    path = out_dir / STEPS_DIR / step_file_name(manifest.step)
    with atomic_file(path) as handle:
        encode_step(handle, manifest, arrays)
    return path


def read_step(source: Path | BinaryIO, *, arrays: bool = True) -> tuple[StepManifest, dict[str, np.ndarray]]:
    """(manifest, tensor name -> array) of one complete step file (a path or an open binary file); no arrays
    when ``arrays`` is False."""
    with np.load(source, allow_pickle=False) as archive:
        manifest = StepManifest.from_json(str(archive[MANIFEST_KEY]))
        if not arrays:
            return manifest, {}
        entries = {entry: archive[entry] for entry in manifest.entries()}
    values = {}
    for name in manifest.arrays:
        if name in manifest.packed:
            entry, offset, shape = manifest.packed[name]
            size = int(np.prod(shape, dtype=np.int64))
            values[name] = entries[entry][offset : offset + size].reshape(shape)
        else:
            values[name] = entries[name]
    return manifest, values


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


def write_collections(out_dir: Path, collections: Mapping[str, dict]) -> Path:
    path = out_dir / COLLECTIONS_FILE
    atomic_write_text(path, json.dumps(collections, indent=1, sort_keys=True))
    return path


def write_silent_tensors(out_dir: Path, tensors: Mapping[str, str]) -> Path:
    path = out_dir / SILENT_TENSORS_FILE
    atomic_write_text(path, json.dumps({"tensors": dict(sorted(tensors.items()))}, indent=1))
    return path
