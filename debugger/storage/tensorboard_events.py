"""TensorBoard event files from the hook, as SageMaker Debugger wrote them under TensorBoardOutputConfig.

Where: a SageMaker job (and a local one: the local platform plays SageMaker's part) has the TensorBoard
configuration file SageMaker writes into the container (``tensorboardoutputconfig.json``: env
TENSORBOARD_CONFIG_FILE_PATH, else in SM_INPUT_CONFIG_DIR, else /opt/ml/input/config); its LocalPath is the
directory, and SageMaker uploads it to ``{S3OutputPath}/{job}/tensorboard-output/``. Without that file, smdebug's
hook parameters decide: ``tensorboard_dir``, else ``{out_dir}/tensorboard`` when ``export_tensorboard``.

What, per training step (tag: value):

    loss                     the step's loss
    learning_rate            the optimizer's learning rate
    gradient_norm/total      the total gradient norm (the signal ExplodingTensor checks)
    weight_norm/total        the total norm of the watched parameters
    rules/<rule name>        the rule's evaluation: 0 InProgress or NoIssuesFound, 1 IssuesFound, -1 Error

and at each step the hook saves (its save interval): ``weights/<parameter>`` and ``gradients/<parameter>``
histograms of the finite values, and ``gradient_norm/<parameter>`` and ``weight_norm/<parameter>`` scalars.
Evaluation steps (smdebug's EVAL/PREDICT modes) write ``eval/loss`` only. Non-finite values are written as they
are (TensorBoard shows them as gaps), so an explosion is visible at its step.

The writer is tensorboardX's (a maintained writer of the event format, with its own background thread).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from contracts import ContractError
from contracts.job import (
    DEFAULT_INPUT_CONFIG_DIR,
    DEFAULT_TENSORBOARD_LOCAL_PATH,
    INPUT_CONFIG_DIR_ENV,
    TENSORBOARD_CONFIG_FILE,
    TENSORBOARD_CONFIG_FILE_ENV,
)
from contracts.rule_status import ERROR, ISSUES_FOUND
from debugger.core.log_lines import drop_reported_warnings, say

LOGGER = logging.getLogger(__name__)

LOSS = "loss"
EVAL_LOSS = "eval/loss"
LEARNING_RATE = "learning_rate"
TOTAL_GRADIENT_NORM = "gradient_norm/total"
TOTAL_WEIGHT_NORM = "weight_norm/total"
RULE_PREFIX = "rules/"
WEIGHT_HISTOGRAM_PREFIX = "weights/"
GRADIENT_HISTOGRAM_PREFIX = "gradients/"
GRADIENT_NORM_PREFIX = "gradient_norm/"
WEIGHT_NORM_PREFIX = "weight_norm/"
#: rules/<name> values: what a chart of 0/1 lines can show of a RuleEvaluationStatus.
RULE_VALUES = {ISSUES_FOUND: 1.0, ERROR: -1.0}
#: Seconds between the writer's flushes: a job's curves show up in TensorBoard (and in S3) while it trains.
FLUSH_SECONDS = 5
WRITER_INSTALL_HINT = "pip install tensorboardX==2.6.5"


def tensorboard_config_file(environ: Mapping[str, str] = os.environ) -> Path:
    """The TensorBoard configuration file SageMaker writes into the container (it may not exist)."""
    if environ.get(TENSORBOARD_CONFIG_FILE_ENV):
        return Path(environ[TENSORBOARD_CONFIG_FILE_ENV])
    return Path(environ.get(INPUT_CONFIG_DIR_ENV) or DEFAULT_INPUT_CONFIG_DIR) / TENSORBOARD_CONFIG_FILE


def tensorboard_directory(
    export_tensorboard: bool, tensorboard_dir: str | None, out_dir: Path, environ: Mapping[str, str] = os.environ
) -> Path | None:
    """Where this job's event files go, or None: the TensorBoardOutputConfig's LocalPath when SageMaker (or the local
    platform) configured one, else smdebug's rule for its hook parameters. Raises ContractError on a bad file."""
    config_file = tensorboard_config_file(environ)
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ContractError(str(config_file), f"the TensorBoard configuration must be a JSON file: {error}") from None
        if not isinstance(config, dict) or not isinstance(config.get("LocalPath", ""), str):
            raise ContractError(f"{config_file}: LocalPath", 'must be {"LocalPath": "<directory>", ...}')
        return Path(config.get("LocalPath") or DEFAULT_TENSORBOARD_LOCAL_PATH)
    if tensorboard_dir:
        if str(tensorboard_dir).startswith("s3://"):
            raise ContractError(
                "tensorboard_dir",
                "must be a local directory; for S3, the training job's TensorBoardOutputConfig uploads it "
                "(the run_spec's tensorboard_output_path)",
            )
        return Path(tensorboard_dir).expanduser()
    if export_tensorboard:
        return Path(out_dir) / "tensorboard"
    return None


#: Bins of a histogram whose values pass TensorBoard's largest bucket.
HUGE_VALUE_BINS = 30


def _finite_values(tensor: torch.Tensor) -> np.ndarray:
    values = tensor.detach().float().cpu().reshape(-1).numpy()
    return values[np.isfinite(values)]


def histogram_bins(values: np.ndarray, writer) -> Any:
    """TensorBoard's own buckets (tensorboardX's 'tensorflow' bins, about +-1e20 at most) where they hold every
    value; else 30 even bins over the values' own range, for the finite but huge values of a run on its way to
    exploding, which those buckets would leave out (tensorboardX then raises "The histogram is empty" and the job
    would end on a chart)."""
    buckets = writer.default_bins
    low, high = float(values.min()), float(values.max())
    if max(abs(low), abs(high)) < buckets[-1]:
        return "tensorflow"
    if low == high:  # one value: a bin around it, as wide as the value allows
        spread = abs(low) * 1e-6
        return [low - spread, high + spread]
    return np.linspace(low, high, HUGE_VALUE_BINS + 1).tolist()


class TensorBoardEvents:
    """One job's event files under ``log_dir`` (call :meth:`close` to flush the last ones)."""

    def __init__(self, log_dir: Path):
        from tensorboardX import SummaryWriter  # only a job that writes TensorBoard files needs it

        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._writer = SummaryWriter(logdir=str(self.log_dir), flush_secs=FLUSH_SECONDS)
        drop_reported_warnings()  # tensorboardX's repeated NaN warning is the debugger's to say, once (_scalar)
        self._closed = False
        self._nonfinite_said = False

    @classmethod
    def for_hook(
        cls, export_tensorboard: bool, tensorboard_dir: str | None, out_dir: Path, environ: Mapping[str, str] = os.environ
    ) -> TensorBoardEvents | None:
        """The hook's writer, or None when nothing asks for TensorBoard files. Without tensorboardX the job trains on
        and its log says how to get the files: a missing chart must not cost a training run."""
        directory = tensorboard_directory(export_tensorboard, tensorboard_dir, out_dir, environ)
        if directory is None:
            return None
        try:
            return cls(directory)
        except ImportError:
            LOGGER.warning(
                "TensorBoard files asked for (%s) but tensorboardX is not installed: none are written (%s)",
                directory,
                WRITER_INSTALL_HINT,
            )
            return None

    def training_step(
        self,
        step: int,
        *,
        loss: float | None,
        gradient_norm: float | None,
        learning_rate: float | None,
        parameters: list[tuple[str, torch.nn.Parameter]],
        rule_statuses: Iterable[tuple[str, str]],
        saved: bool,
    ) -> None:
        """A training step's scalars; at a saved step also the parameters' histograms and norms."""
        writer = self._writer
        for tag, value in ((LOSS, loss), (LEARNING_RATE, learning_rate), (TOTAL_GRADIENT_NORM, gradient_norm)):
            if value is not None:
                self._scalar(tag, value, step)
        if parameters:
            weights = [parameter.detach() for _, parameter in parameters]
            self._scalar(TOTAL_WEIGHT_NORM, float(torch.nn.utils.get_total_norm(weights, 2.0)), step)
        for name, status in rule_statuses:
            writer.add_scalar(RULE_PREFIX + name, RULE_VALUES.get(status, 0.0), step)
        if saved:
            self._parameter_details(step, parameters)

    def evaluation_step(self, step: int, loss: float | None) -> None:
        if loss is not None:
            self._scalar(EVAL_LOSS, loss, step)

    def _scalar(self, tag: str, value: float, step: int) -> None:
        value = float(value)
        if not math.isfinite(value) and not self._nonfinite_said:
            # tensorboardX warns "NaN or Inf found in input tensor." for each such value, unexplained: said here once
            self._nonfinite_said = True
            say(
                f"TensorBoard events: {tag} is {value} at step {step}, written as it is (TensorBoard draws no point "
                "there); said once per job, for every non-finite value the debugger writes there",
            )
        self._writer.add_scalar(tag, value, step)

    def _parameter_details(self, step: int, parameters: list[tuple[str, torch.nn.Parameter]]) -> None:
        writer = self._writer
        for name, parameter in parameters:
            for prefix, norm_prefix, tensor in (
                (WEIGHT_HISTOGRAM_PREFIX, WEIGHT_NORM_PREFIX, parameter),
                (GRADIENT_HISTOGRAM_PREFIX, GRADIENT_NORM_PREFIX, parameter.grad),
            ):
                if tensor is None:
                    continue
                norm = float(torch.linalg.vector_norm(tensor.detach().float()))
                self._scalar(norm_prefix + name, norm, step)
                values = _finite_values(tensor)
                if values.size:  # a histogram of nothing (all NaN) is not one: the norm's gap says it
                    writer.add_histogram(prefix + name, values, step, bins=histogram_bins(values, writer))

    def flush(self) -> None:
        if not self._closed:
            self._writer.flush()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()


__all__ = ["TensorBoardEvents", "tensorboard_config_file", "tensorboard_directory"]
