"""The built-in example job's checkpoints: one per epoch (the newest two kept), each with the model, the optimizer,
the random generators' states and the best epoch so far, so a restarted job (spot interruption) resumes exactly."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from contracts.atomic_files import write_atomically
from model.hyperparameters import TrainingHyperparameters
from model.job_inputs import log

CHECKPOINT_PATTERN = re.compile(r"^checkpoint-epoch-(\d+)\.pt$")
CHECKPOINTS_KEPT = 2


@dataclass
class BestEpoch:
    """The epoch with the lowest held-out loss so far, and its weights (early stopping keeps this model)."""

    epoch: int
    test_loss: float
    test_accuracy: float
    model_state: dict[str, torch.Tensor]

    def to_state(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "test_loss": self.test_loss,
            "test_accuracy": self.test_accuracy,
            "model": self.model_state,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> BestEpoch | None:
        if not state:
            return None
        return cls(int(state["epoch"]), float(state["test_loss"]), float(state["test_accuracy"]), state["model"])


def checkpoint_files(directory: Path) -> list[tuple[int, Path]]:
    if not directory.is_dir():
        return []
    found = []
    for path in directory.iterdir():
        match = CHECKPOINT_PATTERN.match(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def architecture_of(hyperparameters: TrainingHyperparameters, num_classes: int) -> dict[str, Any]:
    return {
        "depth": hyperparameters.depth,
        "activation": hyperparameters.activation,
        "add_batch_norm": hyperparameters.add_batch_norm,
        "num_classes": num_classes,
    }


def rng_states() -> dict[str, Any]:
    numpy_state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "numpy": [numpy_state[0], numpy_state[1].tolist(), *numpy_state[2:]],
        "python": random.getstate(),
    }


def restore_rng_states(states: Mapping[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    name, keys, *rest = states["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), *rest))
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))


def save_checkpoint(
    directory: Path,
    epoch: int,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    architecture: dict[str, Any],
    best: BestEpoch | None = None,
) -> Path:
    path = directory / f"checkpoint-epoch-{epoch:04d}.pt"
    state = {
        "epoch": epoch,
        "architecture": architecture,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": rng_states(),
        "best": best.to_state() if best is not None else None,
    }
    write_atomically(path, lambda handle: torch.save(state, handle))
    for _, old in checkpoint_files(directory)[:-CHECKPOINTS_KEPT]:
        old.unlink(missing_ok=True)
    return path


def load_newest_checkpoint(directory: Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest checkpoint that loads; unreadable ones (there should be none: writes are atomic) are skipped."""
    for _, path in reversed(checkpoint_files(directory)):
        try:
            return path, torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # a damaged file must not stop the restart: fall back to the previous one
            log(f"checkpoint {path} is unreadable ({error}); trying an older one")
    return None
