"""A job's training steps for the run's figure: what the job saved, merged step by step.

Three sources, each a list of ``{"kind": "training_step", "step": N, field: value, ...}``:

* the progress lines of the job's log (:mod:`contracts.progress_log`): the built-in example prints one per step with
  every field; a user's script may print none, or lines with some fields only;
* the TensorBoard scalars the debugger's hook writes at every training step (:mod:`debugger.storage.tensorboard_events`:
  ``loss``, ``learning_rate``, ``gradient_norm/total``), read with TensorBoard's own reader;
* the debugger's saved training steps (the trial reader): the loss at the save interval, and in the hook's own
  profile also ``total_gradient_norm`` and ``learning_rate``.

:func:`merge_steps` joins them per step: a field the log gives wins, a field it lacks comes from the debugger. So a
script that prints its own lines, or none, still gets every point its job saved. Evaluation steps (smdebug's
EVAL/PREDICT modes) are left out: the panels are the training curves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from contracts.progress_log import STEP_LINE_TAG, parse_progress_line

#: The curves a step can carry (progress-line field names).
CURVE_FIELDS = ("loss", "gradient_norm", "learning_rate")
#: TensorBoard tag -> field (debugger.storage.tensorboard_events' training-step tags).
TENSORBOARD_TAGS = {"loss": "loss", "gradient_norm/total": "gradient_norm", "learning_rate": "learning_rate"}
#: Every scalar point kept (TensorBoard's reader samples 10,000 per tag by default); nothing else is loaded.
TENSORBOARD_SIZE_GUIDANCE = {
    "scalars": 0, "tensors": 1, "histograms": 1, "compressedHistograms": 1, "images": 1, "audio": 1, "distributions": 1
}  # fmt: skip
#: What a job's hyperparameters call its learning rate when the run_spec maps no ``learning_rate`` name: the
#: conventional name, PyTorch's, its command-line spelling, XGBoost's.
LEARNING_RATE_HYPERPARAMETERS = ("learning_rate", "lr", "learning-rate", "eta")

Step = dict[str, Any]


def steps_from_log(path: Path) -> list[Step]:
    """The job's training steps as its progress lines say them (none for a script that prints none)."""
    if not Path(path).exists():
        return []
    steps = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        parsed = parse_progress_line(line)
        if parsed is not None and parsed["kind"] == STEP_LINE_TAG and isinstance(parsed.get("step"), int):
            steps.append(parsed)
    return steps


def steps_from_tensorboard(directory: Path | None) -> list[Step]:
    """The training steps' loss, learning rate and total gradient norm from the hook's TensorBoard event files
    (every step; non-finite values as they were written)."""
    if directory is None or not Path(directory).is_dir() or not any(Path(directory).glob("*tfevents*")):
        return []
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(directory), size_guidance=TENSORBOARD_SIZE_GUIDANCE)
    accumulator.Reload()
    present = set(accumulator.Tags().get("scalars", []))
    rows: dict[int, Step] = {}
    for tag, field in TENSORBOARD_TAGS.items():
        if tag in present:
            for event in accumulator.Scalars(tag):
                rows.setdefault(event.step, {"kind": STEP_LINE_TAG, "step": event.step})[field] = float(event.value)
    return [rows[step] for step in sorted(rows)]


def steps_from_debug_output(debug_dir: Path | None) -> list[Step]:
    """The training steps the job's debugger saved (its save interval): the loss, and the total gradient norm and
    learning rate where the hook saved them."""
    from debugger.core.collection import LEARNING_RATE, LOSSES
    from debugger.core.modes import ModeKeys
    from debugger.rules import TOTAL_GRADIENT_NORM
    from debugger.trial import create_trial

    if debug_dir is None or not Path(debug_dir).is_dir():
        return []
    trial = create_trial(debug_dir)
    losses = trial.tensor_names(collection=LOSSES)
    names = {"gradient_norm": TOTAL_GRADIENT_NORM, "loss": losses[0] if losses else None, "learning_rate": LEARNING_RATE}
    rows: dict[int, Step] = {}
    for field, name in names.items():
        if name is None or not trial.has_tensor(name):
            continue
        tensor = trial.tensor(name)
        for step in tensor.steps():
            if trial.mode(step) in (ModeKeys.EVAL, ModeKeys.PREDICT):
                continue
            rows.setdefault(step, {"kind": STEP_LINE_TAG, "step": step})[field] = float(tensor.value(step))
    return [rows[step] for step in sorted(rows)]


def merge_steps(*sources: Iterable[Mapping[str, Any]]) -> list[Step]:
    """One row per step, the union of the sources' steps; for each field the first source that has it wins."""
    rows: dict[int, Step] = {}
    for source in sources:
        for step in source:
            row = rows.setdefault(step["step"], {})
            for field, value in step.items():
                row.setdefault(field, value)
    return [rows[step] for step in sorted(rows)]


def job_steps(log_steps: Sequence[Mapping[str, Any]], debug_dir: Path | None, tensorboard_dir: Path | None) -> list[Step]:
    """Everything the job saved about its training steps: its progress lines, filled in step by step from its
    TensorBoard scalars and its debugger's saved steps."""
    return merge_steps(log_steps, steps_from_tensorboard(tensorboard_dir), steps_from_debug_output(debug_dir))


def learning_rate_hyperparameter(
    hyperparameters: Mapping[str, Any] | None, hyperparameter_names: Mapping[str, str] | None = None
) -> tuple[str, float] | None:
    """(name, value) of the learning rate a job was launched with: the run_spec's ``hyperparameter_names``
    mapping of ``learning_rate``, else a usual name; None when none is a number."""
    hyperparameters = hyperparameters or {}
    mapped = (hyperparameter_names or {}).get("learning_rate")
    for name in ([mapped] if mapped else []) + list(LEARNING_RATE_HYPERPARAMETERS):
        value = hyperparameters.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return name, float(value)
        if isinstance(value, str):
            try:
                return name, float(value)
            except ValueError:
                continue
    return None
