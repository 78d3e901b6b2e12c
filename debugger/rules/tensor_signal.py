"""Which recorded tensors cannot show a rule's problem, and why: what the hook found in the model's structure
(:mod:`debugger.hook.pytorch.model_structure`: frozen parameters, biases a normalization removes), for the rules that judge
parameters and gradients. Imports no torch: rules run in XGBoost jobs too.

A parameter that cannot carry a training signal has a gradient of zero (or none) by construction and does not
move: VanishingGradient, WeightUpdateRatio, UnchangedTensor, AllZero, TensorVariance and PoorWeightInitialization
would read that as the failure they look for. Such a parameter's tensors (its weight and its ``gradient/`` name)
are "silent": the rules skip them and say which and why (a rule's StatusDetails, the issue's message).
ExplodingTensor still reads every tensor: a NaN is a NaN wherever it is.

The hook keeps the map on its live trial (``LiveTrial.silent_tensors``) and writes it beside the steps
(``layout.SILENT_TENSORS_FILE``), so a rule run later on the saved trial judges the same tensors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from debugger.storage import layout

GRADIENT_PREFIX = "gradient/"
#: How many skipped tensors a note names before it counts the rest.
NOTE_NAMES = 4


def parameter_tensor_names(parameter_name: str) -> tuple[str, str]:
    """The tensors the hook records for a parameter: its value and its gradient."""
    return parameter_name, GRADIENT_PREFIX + parameter_name


def silent_tensors(trial: Any) -> Mapping[str, str]:
    """tensor name -> why it cannot show an issue, for ``trial`` (in the job: the hook's live map; a saved
    trial: the file the hook wrote, re-read when the trial has seen new steps)."""
    live = getattr(trial, "silent_tensors", None)
    if isinstance(live, Mapping):
        return live
    source = getattr(trial, "source", None)
    if source is None:
        return {}
    seen = len(getattr(trial, "_global_to_mode", ()))
    cached = getattr(trial, "_silent_tensors_cache", None)
    if cached is not None and cached[0] == seen:
        return cached[1]
    found: dict[str, str] = {}
    try:
        if source.exists(layout.SILENT_TENSORS_FILE):
            found = dict(json.loads(source.read_text(layout.SILENT_TENSORS_FILE)).get("tensors", {}))
    except (OSError, ValueError, AttributeError):
        found = {}
    try:
        trial._silent_tensors_cache = (seen, found)
    except AttributeError:
        pass
    return found


def skipped_note(skipped: Mapping[str, str]) -> str:
    """'skipped 3 tensors that cannot show this issue: a (why); b (why); ...' ('' when none)."""
    if not skipped:
        return ""
    names = sorted(skipped)
    shown = "; ".join(f"{name} ({skipped[name]})" for name in names[:NOTE_NAMES])
    more = f"; and {len(names) - NOTE_NAMES} more" if len(names) > NOTE_NAMES else ""
    return f"skipped {len(names)} tensor(s) that cannot show this issue: {shown}{more}"
