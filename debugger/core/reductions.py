"""Reductions: smdebug's ReductionConfig (save reductions of a tensor instead of, or besides, the tensor)
and the reduction functions themselves.

Reduction names: min, max, mean, median, std, variance, sum, prod and the norms l1, l2; each also on the
absolute value of the tensor (``abs_`` prefix in the configuration file, ``abs=True`` in the trial). In the
configuration file's ``reductions`` list norms may also be spelled ``l1_norm`` / ``abs_l2_norm``. What a hook saves
(:func:`saved_reduction`) and what a trial computes from a saved tensor (:func:`read_reduction`) differ as smdebug's
do: a saved std is the sample's (torch), one computed on read the population's (numpy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from contracts import ContractError

ALLOWED_REDUCTIONS = ("min", "max", "mean", "median", "std", "variance", "sum", "prod")
ALLOWED_NORMS = ("l1", "l2")


def _absolute(values: np.ndarray, absolute: bool) -> np.ndarray:
    if values.dtype.kind not in "biufc":
        raise TypeError(f"a tensor of {values.dtype} values has no reductions")
    return np.abs(values) if absolute else values


def saved_reduction(array: Any, reduction: str, *, abs: bool = False) -> float:  # noqa: A002 - smdebug's keyword
    """The reduction a hook saves (float64 arithmetic). smdebug's PyTorch hook reduces with torch, so "std" and
    "variance" are the sample's, with Bessel's correction (divided by n - 1; NaN for a single value), as torch's are."""
    values = _absolute(np.asarray(array, dtype=np.float64), abs)
    if reduction in ("std", "variance"):
        if values.size < 2:
            return float("nan")
        variance = float(values.var(ddof=1))
        return math.sqrt(variance) if reduction == "std" else variance
    return float(read_reduction(values, reduction))


def read_reduction(array: Any, reduction: str, *, abs: bool = False) -> Any:  # noqa: A002
    """The reduction a trial computes on read from a saved tensor, as smdebug computes it: numpy, in the array's own
    dtype (a float32 tensor gives a float32 value), "std" and "variance" of the values themselves (divided by n). The
    norms are those of the flattened tensor, as the hook saves them (smdebug's np.linalg.norm(x, ord) would give a
    matrix norm for a 2-d tensor and fail on a scalar: docs/smdebug-compatibility.md)."""
    values = _absolute(np.asarray(array), abs)
    if reduction == "min":
        return np.amin(values)
    if reduction == "max":
        return np.amax(values)
    if reduction == "mean":
        return np.mean(values)
    if reduction == "median":
        return np.median(values)
    if reduction == "std":
        return np.std(values)
    if reduction == "variance":
        return np.var(values)
    if reduction == "sum":
        return np.sum(values)
    if reduction == "prod":
        return np.prod(values)
    if reduction == "l1":
        return np.sum(np.abs(values))
    if reduction == "l2":
        return np.sqrt(np.sum(np.square(values)))
    raise ValueError(f"reduction must be one of {', '.join(ALLOWED_REDUCTIONS + ALLOWED_NORMS)}; got {reduction!r}")


def reduction_key(reduction: str, abs: bool) -> str:  # noqa: A002
    """How a saved reduction is keyed in a step file: "max", "abs_mean"."""
    return f"abs_{reduction}" if abs else reduction


def _names(values: Any, allowed: tuple[str, ...], field: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ContractError(field, f"must be a list of names from {', '.join(allowed)}; got {values!r}")
    names = list(values)
    for name in names:
        if name not in allowed:
            raise ContractError(field, f"{name!r} is not allowed; choose from {', '.join(allowed)}")
    return names


class ReductionConfig:
    """What to save of each tensor: its reductions and/or (``save_raw_tensor``) the tensor itself.

    With no reductions the tensor itself is saved, as smdebug does."""

    def __init__(self, reductions=None, abs_reductions=None, norms=None, abs_norms=None, save_raw_tensor=False, save_shape=False):
        self.reductions = _names(reductions, ALLOWED_REDUCTIONS, "reductions")
        self.abs_reductions = _names(abs_reductions, ALLOWED_REDUCTIONS, "abs_reductions")
        self.norms = _names(norms, ALLOWED_NORMS, "norms")
        self.abs_norms = _names(abs_norms, ALLOWED_NORMS, "abs_norms")
        for field, value in (("save_raw_tensor", save_raw_tensor), ("save_shape", save_shape)):
            if not isinstance(value, bool):
                raise ContractError(field, f"must be True or False; got {value!r}")
        self.save_raw_tensor = save_raw_tensor
        self.save_shape = save_shape

    def reduction_list(self) -> list[tuple[str, bool]]:
        """(reduction, abs) pairs, without repeats."""
        pairs = [(name, False) for name in self.reductions + self.norms]
        pairs += [(name, True) for name in self.abs_reductions + self.abs_norms]
        return list(dict.fromkeys(pairs))

    @property
    def saves_raw(self) -> bool:
        return self.save_raw_tensor or not self.reduction_list()

    @classmethod
    def from_parameters(cls, parameters: dict[str, Any], where: str) -> ReductionConfig:
        """From HookParameters / CollectionParameters: ``reductions`` (comma list), ``save_raw_tensor``, ``save_shape``."""
        lists: dict[str, list[str]] = {"reductions": [], "abs_reductions": [], "norms": [], "abs_norms": []}
        for name in (part.strip() for part in str(parameters.get("reductions", "")).split(",")):
            if not name:
                continue
            absolute = name.startswith("abs_")
            base = name[4:] if absolute else name
            base = base[: -len("_norm")] if base.endswith("_norm") else base
            if base in ALLOWED_NORMS:
                lists["abs_norms" if absolute else "norms"].append(base)
            elif base in ALLOWED_REDUCTIONS:
                lists["abs_reductions" if absolute else "reductions"].append(base)
            else:
                allowed = ", ".join(ALLOWED_REDUCTIONS + ALLOWED_NORMS)
                raise ContractError(
                    f"{where}.reductions", f"{name!r} is not a reduction; use {allowed}, l1_norm/l2_norm, each optionally abs_"
                )
        flags = {}
        for key in ("save_raw_tensor", "save_shape"):
            flags[key] = parse_flag(parameters.get(key, False), f"{where}.{key}")
        return cls(**lists, **flags)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "reductions": self.reductions,
            "abs_reductions": self.abs_reductions,
            "norms": self.norms,
            "abs_norms": self.abs_norms,
            "save_raw_tensor": self.save_raw_tensor,
            "save_shape": self.save_shape,
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReductionConfig) and self.to_json_dict() == other.to_json_dict()

    def __repr__(self) -> str:
        return f"ReductionConfig({self.to_json_dict()})"


def parse_flag(value: Any, where: str) -> bool:
    """True/False as a bool or the strings SageMaker and smdebug write ("True", "false", "1", "0")."""
    if isinstance(value, bool):
        return value
    lowered = str(value).strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ContractError(where, f'must be "True" or "False"; got {value!r}')
