"""A user's own training script, written for SageMaker Debugger (smdebug) as its documentation shows, unchanged:
an MLP classifier on any array data set.

SageMaker's script mode runs it as ``python train.py --lr 0.05 --grad-clip 0 ...``; the data comes from the
``train`` channel (and ``validation`` if given, else a held-out slice of train), each a directory with
``x.npy`` (N, ...) features and ``y.npy`` (N,) integer labels. Each epoch it prints a line the run_spec's
metric regex reads and saves the validation accuracy with the debugger::

    epoch=3 train_loss=0.1234 val_loss=0.2345 val_accuracy=0.9375
"""

import argparse
import json
import os

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--grad-clip", type=float, default=0.0, help="clip the gradient norm to this (0: off)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "data/train"))
    parser.add_argument("--validation", default=os.environ.get("SM_CHANNEL_VALIDATION"))
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    return parser.parse_args()


def pick_device():
    """The GPU when the container has one (SageMaker's SM_NUM_GPUS, else what torch sees), else the CPU."""
    gpus = int(os.environ.get("SM_NUM_GPUS") or torch.cuda.device_count())
    return torch.device("cuda" if gpus > 0 and torch.cuda.is_available() else "cpu")


def load(directory):
    x = np.load(os.path.join(directory, "x.npy")).astype(np.float32)
    y = np.load(os.path.join(directory, "y.npy")).astype(np.int64)
    return torch.from_numpy(x.reshape(len(x), -1)), torch.from_numpy(y)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    x, y = load(args.train)
    if args.validation:
        x_val, y_val = load(args.validation)
    else:
        cut = int(len(y) * 0.8)
        x, x_val, y, y_val = x[:cut], x[cut:], y[:cut], y[cut:]
    mean, std = x.mean(dim=0), x.std(dim=0) + 1e-6
    x, x_val = (x - mean) / std, (x_val - mean) / std
    classes = int(max(y.max(), y_val.max())) + 1
    device = pick_device()
    print(f"device: {device} (SM_NUM_GPUS={os.environ.get('SM_NUM_GPUS', 'unset')})", flush=True)
    x, y, x_val, y_val = x.to(device), y.to(device), x_val.to(device), y_val.to(device)

    model = nn.Sequential(
        nn.Linear(x.shape[1], args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, classes),
    ).to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)

    # SageMaker Debugger's script-mode pattern: the hook from the configuration file SageMaker writes.
    hook = smd.Hook.create_from_json_file()
    hook.register_module(model)
    hook.register_loss(loss_fn)

    for epoch in range(args.epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        order = torch.randperm(len(y), device=device)
        total = 0.0
        for start in range(0, len(y), args.batch_size):
            batch = order[start : start + args.batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(x[batch]), y[batch])
            loss.backward()
            if args.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
            optimizer.step()
            total += loss.item() * len(batch)

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

    os.makedirs(args.model_dir, exist_ok=True)
    torch.save({name: tensor.cpu() for name, tensor in model.state_dict().items()}, os.path.join(args.model_dir, "model.pt"))
    with open(os.path.join(args.model_dir, "metrics.json"), "w") as handle:
        json.dump({"val_accuracy": val_accuracy, "val_loss": val_loss}, handle)


if __name__ == "__main__":
    main()
