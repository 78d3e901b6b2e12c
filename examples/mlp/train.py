"""A user's own training script, written for SageMaker Debugger (smdebug) as its documentation shows, unchanged:
an MLP classifier on any array data set.

SageMaker's script mode runs it as ``python train.py --lr 0.05 --grad-clip 0 ...``; the data comes from the
``train`` channel (and ``validation`` if given, else a held-out slice of train), each a directory with
``x.npy`` (N, ...) features (images such as scikit-learn's 8x8 digits keep their shape) and ``y.npy`` (N,)
integer labels. Each epoch it prints a line the run_spec's metric regex reads and saves the validation accuracy
with the debugger::

    epoch=3 train_loss=0.1234 val_loss=0.2345 val_accuracy=0.9375

Like scripts written for SageMaker's managed spot training it checkpoints every epoch into the checkpoint
directory (SageMaker's /opt/ml/checkpoints; ``TRAINING_CHECKPOINT_DIR`` when run elsewhere) and resumes from
the newest checkpoint it finds there, with this run's hyperparameters.
"""

import argparse
import json
import os
import threading
import time

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd

ACTIVATIONS = {"relu": nn.ReLU, "leaky_relu": nn.LeakyReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}
OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def flag(text):
    return str(text).lower() in ("1", "true", "yes")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--grad-clip", type=float, default=0.0, help="clip the gradient norm to this (0: off)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-classes", type=int, default=0, help="output classes (0: the largest label + 1)")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--depth", type=int, default=2, help="hidden layers")
    parser.add_argument("--activation", choices=sorted(ACTIVATIONS), default="relu")
    parser.add_argument("--init-scale", type=float, default=1.0, help="factor on the initial weights' scale")
    parser.add_argument("--batch-norm", type=flag, default=False)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD's momentum")
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd")
    parser.add_argument("--class-weighting", choices=["none", "balanced"], default="none")
    parser.add_argument("--early-stopping-patience", type=int, default=0, help="0: off")
    parser.add_argument("--normalize", type=flag, default=True, help="standardise the features")
    parser.add_argument("--augment-shift", type=int, default=0, help="shift each training image by up to N pixels")
    parser.add_argument("--augment-noise", type=float, default=0.0, help="add Gaussian noise of this scale to each "
                        "training input")
    parser.add_argument("--num-workers", type=int, default=0, help="data-loading worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "data/train"))
    parser.add_argument("--validation", default=os.environ.get("SM_CHANNEL_VALIDATION"))
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    parser.add_argument(
        "--checkpoint-dir", default=os.environ.get("TRAINING_CHECKPOINT_DIR", "/opt/ml/checkpoints")
    )
    return parser.parse_args()


def pick_device():
    """The GPU when the container has one (SageMaker's SM_NUM_GPUS, else what torch sees), else the CPU."""
    gpus = int(os.environ.get("SM_NUM_GPUS") or torch.cuda.device_count())
    return torch.device("cuda" if gpus > 0 and torch.cuda.is_available() else "cpu")


def load(directory):
    x = np.load(os.path.join(directory, "x.npy")).astype(np.float32)
    y = np.load(os.path.join(directory, "y.npy")).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


class Block(nn.Module):
    """Linear -> [batch norm] -> activation, the activation module named after its kind (``relu``, ``tanh``...), so
    smdebug's tensor names read ``layers.0.relu_output_0`` as the built-in rules' regexes expect."""

    def __init__(self, inputs, outputs, activation, batch_norm):
        super().__init__()
        # A bias before batch norm is cancelled by its mean subtraction (its gradient is zero): leave it out.
        self.linear = nn.Linear(inputs, outputs, bias=not batch_norm)
        self.norm = nn.BatchNorm1d(outputs) if batch_norm else nn.Identity()
        self.activation_name = activation
        setattr(self, activation, ACTIVATIONS[activation]())

    def forward(self, x):
        return getattr(self, self.activation_name)(self.norm(self.linear(x)))


class MLP(nn.Module):
    def __init__(self, features, classes, args):
        super().__init__()
        self.flatten = nn.Flatten()
        widths = [features] + [args.hidden] * args.depth
        self.layers = nn.ModuleList(
            Block(widths[i], widths[i + 1], args.activation, args.batch_norm) for i in range(args.depth)
        )
        self.dropout = nn.Dropout(args.dropout) if args.dropout > 0 else nn.Identity()
        self.out = nn.Linear(widths[-1], classes)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                gain = nn.init.calculate_gain("relu" if args.activation in ("relu", "leaky_relu") else "tanh")
                nn.init.xavier_normal_(module.weight, gain=gain * args.init_scale) if args.init_scale else nn.init.zeros_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def forward(self, x):
        x = self.flatten(x)
        for layer in self.layers:
            x = layer(x)
        return self.out(self.dropout(x))


class RefreshingCache(torch.utils.data.Dataset):
    """The training set behind a lock that a background refresh holds while it reloads (every epoch start).

    A forked data-loading worker inherits the lock in whatever state the parent's refresh thread left it: forked
    mid-refresh, the worker's copy stays locked forever and the loader waits for it (the classic fork-with-a-held-
    lock deadlock). In the training process (``--num-workers 0``) a read just waits for the refresh to end."""

    def __init__(self, x, y):
        self.x, self.y = x, y
        self.lock = threading.Lock()

    def refresh(self, seconds=0.2):
        self.lock.acquire()

        def reload():
            time.sleep(seconds)  # re-reading the source
            self.lock.release()

        threading.Thread(target=reload, daemon=True).start()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, index):
        with self.lock:
            return self.x[index], self.y[index]


def augment(inputs, args):
    """A fresh variant of each training sample at every step: a random shift of up to ``--augment-shift`` pixels
    along an image's last two axes (vacated pixels 0), then Gaussian noise of ``--augment-noise``."""
    if args.augment_shift and inputs.dim() >= 3:
        shifted = torch.zeros_like(inputs)
        height, width = inputs.shape[-2:]
        for index, (dy, dx) in enumerate(torch.randint(-args.augment_shift, args.augment_shift + 1, (len(inputs), 2))):
            dy, dx = int(dy), int(dx)
            shifted[index, ..., max(dy, 0):height + min(dy, 0), max(dx, 0):width + min(dx, 0)] = (
                inputs[index, ..., max(-dy, 0):height + min(-dy, 0), max(-dx, 0):width + min(-dx, 0)]
            )
        inputs = shifted
    if args.augment_noise:
        inputs = inputs + args.augment_noise * torch.randn_like(inputs)
    return inputs


def newest_checkpoint(directory):
    if not os.path.isdir(directory):
        return None
    names = sorted(name for name in os.listdir(directory) if name.startswith("checkpoint-") and name.endswith(".pt"))
    return os.path.join(directory, names[-1]) if names else None


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    x, y = load(args.train)
    if args.validation:
        x_val, y_val = load(args.validation)
    else:
        cut = int(len(y) * 0.8)
        x, x_val, y, y_val = x[:cut], x[cut:], y[:cut], y[cut:]
    if args.normalize:
        mean, std = x.mean(dim=0), x.std(dim=0) + 1e-6
        x, x_val = (x - mean) / std, (x_val - mean) / std
    classes = args.num_classes or int(max(y.max(), y_val.max())) + 1
    device = pick_device()
    print(f"device: {device} (SM_NUM_GPUS={os.environ.get('SM_NUM_GPUS', 'unset')})", flush=True)
    x_val, y_val = x_val.to(device), y_val.to(device)

    model = MLP(int(np.prod(x.shape[1:])), classes, args).to(device)
    weights = None
    if args.class_weighting == "balanced":
        counts = torch.bincount(y, minlength=classes).float()
        weights = torch.where(counts > 0, len(y) / (classes * counts.clamp(min=1)), torch.zeros_like(counts))
        weights = weights.to(device)
    loss_fn = nn.CrossEntropyLoss(weight=weights)
    settings = {"momentum": args.momentum} if args.optimizer == "sgd" else {}
    optimizer = OPTIMIZERS[args.optimizer](model.parameters(), lr=args.lr, weight_decay=args.weight_decay, **settings)

    start_epoch, best = 0, None
    checkpoint = newest_checkpoint(args.checkpoint_dir)
    if checkpoint:
        state = torch.load(checkpoint, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        for group in optimizer.param_groups:  # this run's hyperparameters, not the checkpoint's
            group.update(lr=args.lr, weight_decay=args.weight_decay, **settings)
        start_epoch, best = state["epoch"] + 1, state["best"]
        print(f"resuming from {checkpoint}: continuing at epoch {start_epoch}", flush=True)

    # SageMaker Debugger's script-mode pattern: the hook from the configuration file SageMaker writes.
    hook = smd.Hook.create_from_json_file()
    hook.register_module(model)
    hook.register_loss(loss_fn)

    data = RefreshingCache(x, y)
    val_accuracy = val_loss = None
    for epoch in range(start_epoch, args.epochs):
        if best and args.early_stopping_patience and epoch - 1 - best["epoch"] >= args.early_stopping_patience:
            break
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        data.refresh()
        loader = torch.utils.data.DataLoader(
            data, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers,
            generator=torch.Generator().manual_seed(args.seed * 1000 + epoch),
        )
        total = 0.0
        for inputs, labels in loader:
            inputs, labels = augment(inputs.to(device), args), labels.to(device)
            optimizer.zero_grad()
            logits = model(inputs)
            loss = loss_fn(logits, labels)
            hook.save_tensor("labels", labels)
            hook.save_tensor("predictions", logits.argmax(dim=1))
            loss.backward()
            if args.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimizer.step()
            total += loss.item() * len(labels)

        hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            logits = model(x_val)
            val_loss = loss_fn(logits, y_val).item()
            val_accuracy = (logits.argmax(dim=1) == y_val).float().mean().item()
        hook.save_scalar("validation:accuracy", val_accuracy, sm_metric=True)
        print(
            f"epoch={epoch} train_loss={total / len(y):.4f} val_loss={val_loss:.4f} val_accuracy={val_accuracy:.4f}",
            flush=True,
        )
        if best is None or val_loss < best["val_loss"]:
            best = {"epoch": epoch, "val_loss": val_loss, "val_accuracy": val_accuracy,
                    "model": {name: tensor.detach().cpu().clone() for name, tensor in model.state_dict().items()}}
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        path = os.path.join(args.checkpoint_dir, f"checkpoint-{epoch:04d}.pt")
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(), "best": best},
                   path + ".tmp")
        os.replace(path + ".tmp", path)
        for old in sorted(os.listdir(args.checkpoint_dir))[:-2]:
            os.remove(os.path.join(args.checkpoint_dir, old))
        if args.early_stopping_patience and epoch - best["epoch"] >= args.early_stopping_patience:
            break

    if val_accuracy is None:
        # Resumed with every epoch already done: the checkpoint's model is the result; report its figures.
        with torch.no_grad():
            model.eval()
            logits = model(x_val)
            val_loss = loss_fn(logits, y_val).item()
            val_accuracy = (logits.argmax(dim=1) == y_val).float().mean().item()
        if not (args.early_stopping_patience and best is not None):
            print(f"epoch={args.epochs - 1} val_loss={val_loss:.4f} val_accuracy={val_accuracy:.4f}", flush=True)
    if args.early_stopping_patience and best is not None:
        # Early stopping keeps the best epoch's model; its figures are the last the log reports.
        model.load_state_dict(best["model"])
        val_loss, val_accuracy = best["val_loss"], best["val_accuracy"]
        print(f"early stopping: keeping epoch {best['epoch']}", flush=True)
        print(f"epoch={best['epoch']} val_loss={val_loss:.4f} val_accuracy={val_accuracy:.4f}", flush=True)
        hook.save_scalar("validation:accuracy", val_accuracy, sm_metric=True)
    os.makedirs(args.model_dir, exist_ok=True)
    torch.save({name: tensor.cpu() for name, tensor in model.state_dict().items()}, os.path.join(args.model_dir, "model.pt"))
    with open(os.path.join(args.model_dir, "metrics.json"), "w") as handle:
        json.dump({"val_accuracy": val_accuracy, "val_loss": val_loss}, handle)


if __name__ == "__main__":
    main()
