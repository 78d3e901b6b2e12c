"""Writes saved steps off the training thread: a bounded queue and one writer thread.

The training thread only copies the tensors a step saves (``tensor.detach().clone()``, a memcpy) into a
:class:`StepRecord` and submits it; the writer thread turns them into numpy arrays, computes the configured
reductions and shapes, and writes the step file atomically (temporary file + ``os.replace``), so a reader
still sees a step complete or not at all. The queue is bounded (in steps and in bytes): when the disk cannot
keep up, ``submit`` waits instead of holding an unbounded number of steps in memory. ``flush`` waits until everything
submitted is on disk (a rule stop calls it before raising); ``close`` drains and stops the thread. A write
that fails is re-raised on the training thread at the next ``submit``, ``flush`` or ``close``.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from debugger.core.reductions import reduction_key, saved_reduction
from debugger.storage import layout

LOGGER = logging.getLogger(__name__)
#: Steps waiting to be written at most; ``submit`` blocks beyond it.
DEFAULT_MAX_PENDING = 8
#: Bytes of tensors waiting to be written at most (a step bigger than this still goes, alone).
DEFAULT_MAX_PENDING_BYTES = 512 * 1024 * 1024
#: The writer thread's nice value (19: the lowest priority).
WRITER_NICENESS = 19


class PackedTensors:
    """Copies of many tensors of one dtype and device in one flat buffer, made by one torch operation (one
    parallel copy instead of one per tensor: on a busy machine each parallel operation waits for its slowest
    thread). The views of the single tensors are made only when something reads them."""

    __slots__ = ("flat", "shapes", "_sizes", "_offsets", "_pieces")

    def __init__(self, tensors: list[Any]):
        import torch  # only PyTorch jobs pack tensors: an XGBoost job never imports torch

        with torch.no_grad():  # a copy, not a node of the training graph
            flat = torch._C._nn.flatten_dense_tensors(tensors)
            if flat.data_ptr() == tensors[0].data_ptr():
                # one contiguous tensor comes back as a view of itself, not a copy: the step would be written
                # with whatever the parameter holds when the writer thread gets to it
                flat = flat.clone()
            self.flat = flat
        self.shapes = [tuple(tensor.shape) for tensor in tensors]
        self._sizes: list[int] | None = None
        self._offsets: list[int] | None = None
        self._pieces: list[Any] | None = None

    @property
    def sizes(self) -> list[int]:
        if self._sizes is None:
            self._sizes = [math.prod(shape) for shape in self.shapes]
        return self._sizes

    @property
    def offsets(self) -> list[int]:
        if self._offsets is None:
            self._offsets = [0, *itertools.accumulate(self.sizes)][:-1]
        return self._offsets

    def pieces(self) -> list[Any]:
        """The flat (1-d) views of every tensor, from one split."""
        if self._pieces is None:
            self._pieces = list(self.flat.split(self.sizes))
        return self._pieces


class PackedSlice:
    """One tensor of a PackedTensors."""

    __slots__ = ("packed", "index")

    def __init__(self, packed: PackedTensors, index: int):
        self.packed, self.index = packed, index

    @property
    def shape(self) -> tuple[int, ...]:
        return self.packed.shapes[self.index]

    def numel(self) -> int:
        return self.packed.sizes[self.index]

    def element_size(self) -> int:
        return self.packed.flat.element_size()

    def tensor(self) -> Any:
        return self.packed.pieces()[self.index].view(self.shape)


def to_numpy(value: Any) -> np.ndarray:
    """A numpy array of a torch tensor (any device), a packed copy, a numpy array or a Python number."""
    if isinstance(value, PackedSlice):
        value = value.tensor()
    if hasattr(value, "detach"):
        value = value.detach()
        if value.device.type != "cpu":
            value = value.cpu()
        return value.numpy()
    return np.asarray(value)


@dataclasses.dataclass
class StepRecord:
    """Everything one step saves, as captured on the training thread."""

    step: int
    mode: str
    mode_step: int
    tensors: dict[str, Any] = dataclasses.field(default_factory=dict)
    membership: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    #: Tensors saved in full (the others only as reductions and/or shape).
    raw: set[str] = dataclasses.field(default_factory=set)
    reductions: dict[str, list[tuple[str, bool]]] = dataclasses.field(default_factory=dict)
    shapes: set[str] = dataclasses.field(default_factory=set)
    #: Packed copies, with (name, PackedSlice) of each tensor kept from them: written whole.
    buffers: list[tuple[PackedTensors, list[tuple[str, PackedSlice]]]] = dataclasses.field(default_factory=list)

    def add(self, name: str, value: Any, collections: list[str], raw: bool = True, reductions=(), shape=False) -> None:
        self.tensors[name] = value
        members = self.membership.setdefault(name, [])
        members.extend(collection for collection in collections if collection not in members)
        if raw:
            self.raw.add(name)
        if reductions:
            self.reductions.setdefault(name, []).extend(reductions)
        if shape:
            self.shapes.add(name)

    def __bool__(self) -> bool:
        return bool(self.tensors)

    @property
    def nbytes(self) -> int:
        return sum(
            value.numel() * value.element_size() if hasattr(value, "element_size") else np.asarray(value).nbytes
            for value in self.tensors.values()
        )

    def encode(self) -> tuple[layout.StepManifest, dict[str, np.ndarray]]:
        """The step file's manifest and entries (the numpy work: runs on the writer thread). Tensors copied into
        one flat buffer are written as that buffer (one entry, one write) and found again by offset."""
        entries: dict[str, np.ndarray] = {}
        packed: dict[str, list] = {}
        for index, (buffer, members) in enumerate(self.buffers):
            kept = [(name, part) for name, part in members if name in self.raw and self.tensors.get(name) is part]
            if kept:
                entry = f"__packed_{index}__"
                entries[entry] = to_numpy(buffer.flat)
                packed.update({name: [entry, buffer.offsets[part.index], list(part.shape)] for name, part in kept})
        reductions: dict[str, dict[str, float]] = {}
        shapes: dict[str, list[int]] = {}
        for name, value in self.tensors.items():
            if name in self.raw and name not in packed:
                entries[name] = to_numpy(value)
            if name not in self.reductions and name not in self.shapes:
                continue
            array = to_numpy(value)
            if name in self.reductions:
                reductions[name] = {
                    reduction_key(reduction, absolute): saved_reduction(array, reduction, abs=absolute)
                    for reduction, absolute in dict.fromkeys(self.reductions[name])
                }
            if name in self.shapes:
                shapes[name] = list(array.shape)
        manifest = layout.StepManifest(
            step=self.step,
            mode=self.mode,
            mode_step=self.mode_step,
            membership=dict(self.membership),
            arrays=[name for name in self.tensors if name in self.raw],
            reductions=reductions,
            shapes=shapes,
            packed=packed,
        )
        return manifest, entries


def _lower_priority() -> None:
    """Run the writer thread at the lowest CPU priority (Linux: a thread's nice value is its own).

    Training runs one intra-op thread per core; a writer competing with them at equal priority makes every
    parallel torch operation wait for its slowest thread. Niced, the writer takes the gaps between them (data
    loading, Python, the end of a step) and the bounded queue still keeps it from falling behind for good."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WRITER_NICENESS)
    except (AttributeError, OSError) as error:  # not Linux, or not permitted: the writer just runs unniced
        LOGGER.debug("could not lower the step writer's priority: %s", error)


class StepWriter:
    def __init__(
        self,
        out_dir: Path,
        on_written: Callable[[Path], None] | None = None,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
    ):
        self.out_dir = out_dir
        self._on_written = on_written
        self._max_bytes = max_pending_bytes
        self._pending_bytes = 0
        self._space = threading.Condition()
        self._queue: queue.Queue[StepRecord | None] = queue.Queue(maxsize=max_pending)
        self._error: BaseException | None = None
        self.written: list[int] = []
        self._thread = threading.Thread(target=self._run, name="debugger-step-writer", daemon=True)
        self._thread.start()

    def submit(self, record: StepRecord) -> None:
        self._raise_error()
        if not self._thread.is_alive():
            raise RuntimeError("the debugger's step writer is closed; no more steps can be saved")
        size = record.nbytes
        with self._space:
            while self._pending_bytes and self._pending_bytes + size > self._max_bytes and self._error is None:
                self._space.wait(timeout=1.0)
            self._pending_bytes += size
        self._queue.put(record)

    def flush(self) -> None:
        """Return when every submitted step is on disk."""
        if self._thread.is_alive():
            self._queue.join()
        self._raise_error()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError(f"the debugger could not write a step file in {self.out_dir}: {error}") from error

    def _run(self) -> None:
        _lower_priority()
        while True:
            record = self._queue.get()
            try:
                if record is None:
                    return
                size = record.nbytes
                manifest, arrays = record.encode()
                path = layout.write_step(self.out_dir, manifest, arrays)
                self.written.append(record.step)
                if self._on_written is not None:
                    self._on_written(path)
                with self._space:
                    self._pending_bytes -= size
                    self._space.notify_all()
            except Exception as error:  # noqa: BLE001 - reported on the training thread
                LOGGER.error("could not write step %s: %s", getattr(record, "step", "?"), error)
                self._error = error
            finally:
                self._queue.task_done()
