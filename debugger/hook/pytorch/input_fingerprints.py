"""Fingerprints of a training batch's input rows, for ``contracts.training_inputs`` (did the inputs come back
unchanged from one epoch to the next, or were they augmented?)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from contracts.training_inputs import FINGERPRINT_VALUES

#: Fingerprints keep 52 bits: read back with the step's other signals as float64, which holds them exactly.
FINGERPRINT_BITS = 52
#: An odd 64-bit multiplier (the golden ratio's, as in Fibonacci hashing), as a signed int64: each sampled value of a
#: row is weighted by an odd multiple of it, so a value's place in the row counts.
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
#: The integer type of a floating-point value's bit pattern, by its size in bytes.
_BITS = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}


def first_batch_tensor(inputs: Any) -> torch.Tensor | None:
    """The first tensor among a forward call's positional inputs with a batch dimension (None: none has)."""
    for value in inputs if isinstance(inputs, tuple) else (inputs,):
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] >= 1:
            return value
    return None


def row_fingerprint_tensor(batch: torch.Tensor) -> torch.Tensor:
    """One integer per row of ``batch`` (int64, under 2**52), computed where the batch lives with no read back to the
    host: a hash of the bit patterns of up to FINGERPRINT_VALUES of the row's values, spread evenly over it, so an
    image costs what a short feature vector does. A shift, crop, flip or added noise changes most of them; the same
    sample handed over unchanged gives the same fingerprint in every epoch."""
    with torch.no_grad():
        rows = batch.detach().reshape(batch.shape[0], -1)
        stride = max(1, rows.shape[1] // FINGERPRINT_VALUES)
        values = rows[:, ::stride][:, :FINGERPRINT_VALUES]
        if values.is_floating_point():
            values = values.contiguous().view(_BITS[values.element_size()])
        bits = values.to(torch.int64)
        weights = (torch.arange(bits.shape[1], dtype=torch.int64, device=bits.device) * 2 + 1) * _GOLDEN
        mixed = (bits * weights).sum(dim=1)  # int64 arithmetic wraps around: a hash modulo 2**64
        # the high bits folded onto the low ones, which the tally samples rows by (contracts.training_inputs)
        mixed = mixed ^ ((mixed >> 29) & ((1 << 35) - 1))
        return mixed & ((1 << FINGERPRINT_BITS) - 1)


def row_fingerprints(batch: torch.Tensor) -> list[int]:
    """One integer per row of ``batch`` on the host: a hash of the bytes of the values :func:`row_fingerprint_tensor`
    reads. A CPU batch is fingerprinted so (a few tensor operations and a hash per row cost less than the integer
    arithmetic over the sampled values); a batch on a GPU by :func:`row_fingerprint_tensor`, which reads nothing back."""
    rows = batch.detach().reshape(batch.shape[0], -1)
    if rows.shape[1] > FINGERPRINT_VALUES:  # else every value of the row: no slice to take
        stride = max(1, rows.shape[1] // FINGERPRINT_VALUES)
        rows = rows[:, ::stride][:, :FINGERPRINT_VALUES]
    if rows.device.type != "cpu":
        rows = rows.cpu()
    if rows.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as 16-bit integers
        rows = rows.contiguous().view(torch.int16)
    # one copy of the rows' bytes, cut row by row: the same bytes (and hashes) as each row's own tobytes()
    data = np.ascontiguousarray(rows.numpy()).tobytes()
    width = len(data) // rows.shape[0]
    return [hash(data[start : start + width]) for start in range(0, len(data), width)] if width else [hash(b"")] * rows.shape[0]
