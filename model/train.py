"""The built-in example's training job, following SageMaker's container contract.

Run as ``python train.py [--name value ...]`` in ``examples/resnet`` (SageMaker's job
launcher does that), or ``python -m model.train``. Inputs and outputs:

* hyperparameters: ``--name value`` arguments (script mode) if any, else the
  JSON in env ``SM_HPS``, else ``${SM_INPUT_CONFIG_DIR:-/opt/ml/input/config}/hyperparameters.json``,
  else the defaults of :class:`model.hyperparameters.TrainingHyperparameters`;
* channels: ``SM_CHANNEL_TRAIN`` / ``SM_CHANNEL_TEST`` (default
  ``${SM_INPUT_DIR:-/opt/ml/input}/data/{train,test}``), each with x.npy and y.npy (see model.data);
* ``SM_MODEL_DIR`` (default /opt/ml/model): model.pt and metrics.json at the end;
* ``${TRAINING_CHECKPOINT_DIR:-/opt/ml/checkpoints}``: one checkpoint per epoch;
  a restarted job (spot interruption) resumes after the newest one;
* ``${TRAINING_FAILURE_FILE:-/opt/ml/output/failure}``: why the job failed;
* the debugger: the hook configuration file SageMaker Debugger's scripts read
  (env ``SMDEBUG_CONFIG_FILE_PATH``; the job launcher writes it, with the rules
  beside it); without one, ExplodingTensor with StopTraining. Output: env
  ``DEBUG_OUTPUT_DIR``, else the config's LocalPath, else /opt/ml/output/tensors;
* ``TRAINING_JOB_NAME``, ``TRAINING_NUM_THREADS`` (default: all cores);
* the device: the GPU when the container has one (``SM_NUM_GPUS`` and what torch sees,
  ``contracts.job.training_device``), else the CPU; the log says which and why.

Exit codes: 0 success; 1 unexpected error; 2 bad input (hyperparameter,
channel, debugger configuration; the failure text names the field);
3 a debugger rule with a StopTraining action fired; 143 SIGTERM (nothing
partial is written and no failure text, as SageMaker stops a job).
"""

from __future__ import annotations

import json
import math
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from contracts import ContractError
from contracts.atomic_files import write_atomically
from contracts.job import (
    EXIT_BAD_INPUT,
    EXIT_ERROR,
    EXIT_RULE_STOP,
    EXIT_SUCCESS,
    EXIT_TERMINATED,
    HyperparameterError,
)
from contracts.progress_log import format_epoch_line, format_step_line
from debugger import Hook, StopTrainingRequested
from model.checkpoints import BestEpoch, architecture_of, load_newest_checkpoint, restore_rng_states, save_checkpoint
from model.data import NUM_CLASSES
from model.hyperparameters import TrainingHyperparameters
from model.job_inputs import (
    BadInput,
    JobTerminated,
    create_hook,
    load_channels,
    log,
    pick_device,
    read_hyperparameters,
    thread_count,
    write_failure,
)
from model.resnet import build_resnet

DEFAULT_MODEL_DIR = "/opt/ml/model"
DEFAULT_CHECKPOINT_DIR = "/opt/ml/checkpoints"

MODEL_FILE = "model.pt"
METRICS_FILE = "metrics.json"
EVALUATION_BATCH_SIZE = 512
#: Training samples used to re-estimate the BatchNorm statistics at the end of each epoch.
BATCH_NORM_CALIBRATION_SAMPLES = 1024


# --------------------------------------------------------------------------- training


def to_model_input(images: np.ndarray | torch.Tensor, channel_mean: torch.Tensor | None) -> torch.Tensor:
    """uint8 NHWC -> float NCHW in [0, 1] minus the training set's per-channel mean, on the mean's device (the
    uint8 batch moves, a quarter of the float bytes). ``channel_mean`` None (``normalize_inputs`` false): the raw
    0-255 pixel values as floats, on the CPU."""
    tensor = torch.as_tensor(images)
    if channel_mean is None:
        return tensor.permute(0, 3, 1, 2).to(torch.float32)
    tensor = tensor.to(channel_mean.device).permute(0, 3, 1, 2).to(torch.float32).div_(255.0)
    return tensor.sub_(channel_mean.view(1, 3, 1, 1))


def class_weights(labels: np.ndarray, num_classes: int) -> torch.Tensor:
    """Inverse class frequency, scikit-learn's "balanced": n_samples / (n_classes * count); absent classes 0."""
    counts = np.bincount(labels, minlength=num_classes).astype(np.float64)
    present = counts > 0
    weights = np.zeros(num_classes)
    weights[present] = len(labels) / (present.sum() * counts[present])
    return torch.as_tensor(weights, dtype=torch.float32)


def recalibrate_batch_norm(
    model: nn.Module,
    images: torch.Tensor,
    sample: torch.Tensor,
    channel_mean: torch.Tensor | None,
    batch_size: int,
    device: torch.device | None = None,
) -> None:
    """Re-estimate the BatchNorm running statistics with the epoch's final weights ("precise BN").

    PyTorch's running averages (momentum 0.1) lag behind weights that move fast at learning rate 0.1;
    after two short epochs the lag alone can cost a tenth of the held-out accuracy in eval mode while
    the same weights with fresh statistics classify perfectly. A cumulative average over a fixed sample
    of training batches removes the lag. No gradients, no weight changes; a no-op without BatchNorm.
    """
    layers = [module for module in model.modules() if isinstance(module, nn.modules.batchnorm._BatchNorm)]
    if not layers:
        return
    momenta = [layer.momentum for layer in layers]
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None  # cumulative moving average over the calibration batches
    model.train()
    with torch.no_grad():
        for start in range(0, len(sample), batch_size):
            batch = to_model_input(images[sample[start : start + batch_size]], channel_mean)
            model(batch.to(device) if device is not None else batch)
    for layer, momentum in zip(layers, momenta, strict=True):
        layer.momentum = momentum


def evaluate(
    model: nn.Module, images: np.ndarray, labels: np.ndarray, channel_mean: torch.Tensor | None, device: torch.device
) -> tuple[float, float]:
    """Held-out (mean loss, accuracy). Uses its own loss function so the debugger does not record it."""
    model.eval()
    total_loss = 0.0
    correct = 0
    with torch.no_grad():
        for start in range(0, len(labels), EVALUATION_BATCH_SIZE):
            batch = to_model_input(images[start : start + EVALUATION_BATCH_SIZE], channel_mean).to(device)
            targets = torch.as_tensor(labels[start : start + EVALUATION_BATCH_SIZE]).to(device)
            logits = model(batch)
            total_loss += float(F.cross_entropy(logits, targets, reduction="sum"))
            correct += int((logits.argmax(dim=1) == targets).sum())
    model.train()
    return total_loss / len(labels), correct / len(labels)


@dataclass
class TrainingResult:
    test_loss: float
    test_accuracy: float
    train_loss: float | None
    epochs_completed: int
    resumed_from_epoch: int | None


def train(
    hyperparameters: TrainingHyperparameters,
    channels: dict[str, tuple[np.ndarray, np.ndarray]],
    hook: Hook,
    checkpoint_dir: Path,
    model_dir: Path,
    device: torch.device | None = None,
) -> TrainingResult:
    device = device or torch.device("cpu")
    x_train, y_train = channels["train"]
    x_test, y_test = channels["test"]
    num_classes = NUM_CLASSES  # load_channel refused any label outside 0 .. NUM_CLASSES - 1
    architecture = architecture_of(hyperparameters, num_classes)
    channel_mean = (
        torch.as_tensor((x_train.reshape(-1, 3).mean(axis=0) / 255.0).astype(np.float32)).to(device)
        if hyperparameters.normalize_inputs
        else None
    )

    torch.manual_seed(hyperparameters.seed)
    np.random.seed(hyperparameters.seed)
    random.seed(hyperparameters.seed)
    model = build_resnet(
        depth=hyperparameters.depth,
        activation=hyperparameters.activation,
        add_batch_norm=hyperparameters.add_batch_norm,
        num_classes=num_classes,
        dropout=hyperparameters.dropout,
        init_scale=hyperparameters.init_scale,
    ).to(device)  # before the optimizer exists and a checkpoint loads into it: both follow the parameters' device
    weights = class_weights(y_train, num_classes).to(device) if hyperparameters.class_weighting == "balanced" else None
    criterion = nn.CrossEntropyLoss(weight=weights)
    optimizer = torch.optim.SGD(
        model.parameters(),
        lr=hyperparameters.learning_rate_at_epoch(0),
        momentum=hyperparameters.momentum,
        weight_decay=hyperparameters.weight_decay,
    )

    start_epoch = 0
    resumed_from = None
    best: BestEpoch | None = None
    newest = load_newest_checkpoint(checkpoint_dir)
    if newest is not None:
        path, state = newest
        if state.get("architecture") != architecture:
            raise BadInput(
                "IncompatibleCheckpoint",
                f"checkpoint {path} holds a model {state.get('architecture')} but this job builds {architecture}; "
                f"empty the checkpoint directory {checkpoint_dir} or restore the original hyperparameters",
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        for group in optimizer.param_groups:  # the saved state holds the old job's; this job's hyperparameters win
            group["weight_decay"] = hyperparameters.weight_decay
            group["momentum"] = hyperparameters.momentum
        restore_rng_states(state["rng"])
        best = BestEpoch.from_state(state.get("best"))
        resumed_from = int(state["epoch"])
        start_epoch = resumed_from + 1
        log(f"resuming from checkpoint {path}: epoch {resumed_from} done, continuing at epoch {start_epoch}")

    hook.register_module(model)
    hook.register_loss(criterion)
    hook.register_optimizer(optimizer)
    steps_per_epoch = math.ceil(len(y_train) / hyperparameters.batch_size)
    hook.step = start_epoch * steps_per_epoch  # a resumed job keeps numbering steps from where it left off

    log(
        f"training ResNet-{hyperparameters.depth} ({hyperparameters.activation}, "
        f"batch norm {'on' if hyperparameters.add_batch_norm else 'off'}, "
        f"{sum(parameter.numel() for parameter in model.parameters())} parameters) on {len(y_train)} samples, "
        f"{steps_per_epoch} steps per epoch, epochs {start_epoch}..{hyperparameters.num_epochs - 1}"
    )
    images = torch.as_tensor(x_train)
    targets = torch.as_tensor(y_train).to(device)
    train_loss = None
    held_out: tuple[float, float] | None = None
    stopped_early = False
    model.train()
    for epoch in range(start_epoch, hyperparameters.num_epochs):
        if (
            best is not None
            and hyperparameters.early_stopping_patience
            and (epoch - 1 - best.epoch >= hyperparameters.early_stopping_patience)
        ):
            stopped_early = True  # a resumed job whose checkpoint already ran out of patience
            break
        epoch_started = time.monotonic()
        learning_rate = hyperparameters.learning_rate_at_epoch(epoch)
        phase = hyperparameters.phase_at_epoch(epoch)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        hook.set_context(epoch=epoch, phase=phase, steps_per_epoch=steps_per_epoch, learning_rate=learning_rate)
        # One permutation per (seed, epoch): a resumed job sees the same batches it would have seen.
        order = torch.randperm(
            len(targets), generator=torch.Generator().manual_seed(hyperparameters.seed * 100_003 + epoch)
        )
        loss_sum = 0.0
        for batch_index in range(steps_per_epoch):
            step = epoch * steps_per_epoch + batch_index
            indices = order[batch_index * hyperparameters.batch_size : (batch_index + 1) * hyperparameters.batch_size]
            optimizer.zero_grad(set_to_none=True)
            batch = to_model_input(images[indices], channel_mean).to(device)
            loss = criterion(model(batch), targets[indices.to(device)])
            loss.backward()
            loss_value = float(loss.detach())
            if hyperparameters.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), hyperparameters.grad_clip)
            try:
                optimizer.step()  # the hook checks the step first (pre-hook); a rule stop raises before the update
            finally:
                # the hook computed the step's total gradient norm in that check, also when it stops the job there
                log(
                    format_step_line(
                        step=step,
                        epoch=epoch,
                        phase=phase,
                        loss=loss_value,
                        learning_rate=learning_rate,
                        gradient_norm=hook.last_gradient_norm,
                    )
                )
            loss_sum += loss_value
        train_loss = loss_sum / steps_per_epoch
        recalibrate_batch_norm(
            model, images, order[:BATCH_NORM_CALIBRATION_SAMPLES], channel_mean, hyperparameters.batch_size, device
        )
        test_loss, test_accuracy = held_out = evaluate(model, x_test, y_test, channel_mean, device)
        if best is None or test_loss < best.test_loss:
            state_copy = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
            best = BestEpoch(epoch, test_loss, test_accuracy, state_copy)
        save_checkpoint(checkpoint_dir, epoch, model, optimizer, architecture, best)
        log(
            format_epoch_line(
                epoch=epoch,
                train_loss=train_loss,
                test_loss=test_loss,
                test_accuracy=test_accuracy,
                seconds=time.monotonic() - epoch_started,
            )
        )
        patience = hyperparameters.early_stopping_patience
        if patience and epoch - best.epoch >= patience:
            stopped_early = True
            break

    if stopped_early and best is not None:
        # Early stopping keeps the best epoch's model: it is the result, and its held-out figures are the last
        # ones the log reports (the objective reads the last value).
        model.load_state_dict(best.model_state)
        held_out = (best.test_loss, best.test_accuracy)
        log(
            f"early stopping: no better held-out loss for {hyperparameters.early_stopping_patience} epochs; keeping "
            f"epoch {best.epoch}"
        )
        log(
            format_epoch_line(
                epoch=best.epoch,
                train_loss=math.nan,
                test_loss=best.test_loss,
                test_accuracy=best.test_accuracy,
                seconds=0.0,
            )
        )
    test_loss, test_accuracy = held_out or evaluate(model, x_test, y_test, channel_mean, device)
    if start_epoch >= hyperparameters.num_epochs:
        # Resumed with every epoch already done (a remedy that changes nothing the epochs left would use): the
        # checkpoint's model is the result, and its held-out figures are reported as an epoch line would.
        log(
            format_epoch_line(
                epoch=hyperparameters.num_epochs - 1,
                train_loss=math.nan,
                test_loss=test_loss,
                test_accuracy=test_accuracy,
                seconds=0.0,
            )
        )
    hook.close(training_ended=True)
    saved_model = {
        "architecture": architecture,
        "channel_mean": channel_mean.cpu() if channel_mean is not None else None,
        "hyperparameters": asdict(hyperparameters),
        "state_dict": model.state_dict(),
    }
    write_atomically(model_dir / MODEL_FILE, lambda handle: torch.save(saved_model, handle))
    metrics = {
        "test_accuracy": test_accuracy,
        "test_loss": test_loss,
        "train_loss": train_loss,
        "epochs": hyperparameters.num_epochs,
        "resumed_from_epoch": resumed_from,
    }
    write_atomically(model_dir / METRICS_FILE, lambda handle: handle.write(json.dumps(metrics, indent=2)), mode="w")
    log(f"saved {model_dir / MODEL_FILE}: test_accuracy={test_accuracy:.4f} test_loss={test_loss:.6g}")
    return TrainingResult(test_loss, test_accuracy, train_loss, hyperparameters.num_epochs, resumed_from)


def load_model(path: str | os.PathLike) -> tuple[nn.Module, torch.Tensor]:
    """Rebuild a model saved by the job: (model in eval mode, per-channel input mean)."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    model = build_resnet(**saved["architecture"])
    model.load_state_dict(saved["state_dict"])
    return model.eval(), saved["channel_mean"]


# --------------------------------------------------------------------------- entry point


def _raise_job_terminated(signum: int, frame: Any) -> None:
    raise JobTerminated()


def _close_quietly(hook: Hook | None) -> None:
    if hook is None:
        return
    try:
        hook.close(training_ended=True)
    except Exception as error:  # the job is failing already; report the original cause
        print(f"debugger hook did not close cleanly: {error}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()  # signal handlers need the main thread
    previous_handler = signal.signal(signal.SIGTERM, _raise_job_terminated) if in_main_thread else None
    try:
        return run_job(argv, os.environ)
    except JobTerminated:
        print("SIGTERM received: stopping without saving anything", file=sys.stderr, flush=True)
        return EXIT_TERMINATED
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_handler)


def run_job(argv: list[str], environ: Mapping[str, str]) -> int:
    hook = None
    try:
        try:
            hyperparameters = read_hyperparameters(argv, environ)
            hook, hook_source = create_hook(environ)
            torch.set_num_threads(thread_count(environ))
            channels = load_channels(environ)
            device, device_reason = pick_device(environ)
        except HyperparameterError as error:
            _close_quietly(hook)
            write_failure(environ, f"InvalidHyperparameter: {error}")
            return EXIT_BAD_INPUT
        except ContractError as error:
            _close_quietly(hook)
            write_failure(environ, f"InvalidDebuggerConfiguration: {error}")
            return EXIT_BAD_INPUT
        except BadInput as error:
            _close_quietly(hook)
            write_failure(environ, f"{error.kind}: {error}")
            return EXIT_BAD_INPUT

        shown = json.dumps(hyperparameters.to_sagemaker(), sort_keys=True)
        log(f"job {hook.job_name}: hyperparameters {shown}; {torch.get_num_threads()} threads")
        log(f"device: {device} ({device_reason})")
        rule_names = ", ".join(hook.rule_names) or "none"
        log(f"debugger: {hook_source}; rules {rule_names}; output {hook.out_dir}")
        try:
            train(
                hyperparameters,
                channels,
                hook,
                checkpoint_dir=Path(environ.get("TRAINING_CHECKPOINT_DIR", DEFAULT_CHECKPOINT_DIR)),
                model_dir=Path(environ.get("SM_MODEL_DIR", DEFAULT_MODEL_DIR)),
                device=device,
            )
        except StopTrainingRequested as stop:
            _close_quietly(hook)
            write_failure(environ, str(stop))  # "StopTraining: rule ... found an issue at step ..."
            return EXIT_RULE_STOP
        except BadInput as error:
            _close_quietly(hook)
            write_failure(environ, f"{error.kind}: {error}")
            return EXIT_BAD_INPUT
        return EXIT_SUCCESS
    except Exception as error:
        _close_quietly(hook)
        write_failure(environ, f"AlgorithmError: {type(error).__name__}: {error}")
        return EXIT_ERROR


def process_main() -> None:
    """Run the job as the container's process and end it.

    After a rule stop everything that matters is already on disk (the failure
    text, the rule status, the debug output, flushed by the hook's close), so
    the process ends at once: tearing down the interpreter and torch takes
    0.3-2 s, which SageMaker would otherwise bill and the monitor would wait for.
    """
    code = main()
    if code == EXIT_RULE_STOP:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    process_main()
