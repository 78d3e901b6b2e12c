"""How many epochs a job plans to train, read from wherever the run_spec states them: what ObjectiveOutOfReach judges
a job's course against, and what the planner reads as the epochs a job trained. Standard library only.

The epochs are the hyperparameter that holds them, found in this order:

1. the script's name mapped to the conventional ``num_epochs`` (``hyperparameter_names``);
2. the hyperparameter a declared remedy sets to the best epoch (``{"hyperparameter": ..., "to_best_epoch": true}``):
   the declaration says it is the epoch count;
3. a hyperparameter whose name spells an epoch count (:data:`EPOCH_NAMES`, ignoring case, ``-`` and ``_``:
   ``num_epochs``, ``epochs``, ``n-epochs``, ``max_epochs``, ``num_train_epochs``, ...), when exactly one does
   (``num_epochs`` itself wins over the others).

Its value must be a whole number above 0 (a JSON number, or digits as text as script mode passes them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

CONVENTIONAL_NAME = "num_epochs"
#: Names that spell an epoch count, with case, "-" and "_" removed. Not "warmup_epochs" or "epochs_per_eval": an
#: epoch count of a phase, not of the job.
EPOCH_NAMES = frozenset(
    {"numepochs", "epochs", "nepochs", "maxepochs", "numtrainepochs", "trainepochs", "totalepochs", "epochcount",
     "numepoch", "nepoch", "epoch"}
)  # fmt: skip
#: How the reasons name them.
EPOCH_NAMES_SHOWN = "num_epochs, epochs, n_epochs, max_epochs, num_train_epochs"
_SEPARATORS = re.compile(r"[-_\s]")


def spells_epochs(name: str) -> bool:
    return _SEPARATORS.sub("", name).lower() in EPOCH_NAMES


def epochs_hyperparameter(
    hyperparameters: Mapping[str, Any],
    mapped: str | None = None,
    remedies: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
) -> str | None:
    """The name of the hyperparameter holding the job's epochs (module docstring), or None when none is stated.
    ``mapped``: the script's name for ``num_epochs`` (``hyperparameter_names``); ``remedies``: the declared remedies'
    JSON (``contracts.remedies``)."""
    if mapped:
        return mapped if mapped in hyperparameters else None
    for entries in (remedies or {}).values():
        for entry in entries:
            for change in (entry, *(entry.get("also") or ())):
                name = change.get("hyperparameter")
                if change.get("to_best_epoch") and name in hyperparameters:
                    return name
    if CONVENTIONAL_NAME in hyperparameters:
        return CONVENTIONAL_NAME
    spelled = [name for name in hyperparameters if spells_epochs(name)]
    return spelled[0] if len(spelled) == 1 else None


def whole_epochs(value: Any) -> int | None:
    """A whole number of epochs above 0 (an int, or its digits as text), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and value > 0 else None


def planned_epochs(
    hyperparameters: Mapping[str, Any],
    mapped: str | None = None,
    remedies: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
) -> int | None:
    """The epochs these hyperparameters train (:func:`epochs_hyperparameter`'s value), or None."""
    name = epochs_hyperparameter(hyperparameters, mapped, remedies)
    return None if name is None else whole_epochs(hyperparameters[name])
