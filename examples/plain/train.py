"""A plain PyTorch training script: no debugger import, no hook, nothing written for the workflow.

An MLP classifier on the ``train`` channel (``x.npy`` features, ``y.npy`` integer labels: `examples/mlp/make_data.py`
makes them), held out: the ``validation`` channel when there is one, else the train channel's last fifth; SGD with
momentum, compiled with ``torch.compile`` when ``--compile true``. SageMaker's script mode runs it as
``python train.py --lr 0.05 --epochs 5``; the job's debugger watches it all the same (zero script change: the job
launcher attaches to the model and optimizer it creates), and the run_spec's metric regex reads the line it prints
after each epoch::

    epoch=3 train_loss=0.1234 val_loss=0.2345 val_accuracy=0.9375

Like scripts written for SageMaker's managed spot training it checkpoints every epoch into the checkpoint directory
(SageMaker's /opt/ml/checkpoints; ``TRAINING_CHECKPOINT_DIR`` when run elsewhere; none without either) and resumes
from the newest checkpoint there, random state included, so a job restarted on a new instance ends as it would have.
"""

import argparse
import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def load(channel):
    x = torch.from_numpy(np.load(os.path.join(channel, "x.npy"))).float().flatten(1)
    return x, torch.from_numpy(np.load(os.path.join(channel, "y.npy"))).long()


def newest_checkpoint(directory):
    if not directory or not os.path.isdir(directory):
        return None
    names = sorted(name for name in os.listdir(directory) if name.startswith("checkpoint-") and name.endswith(".pt"))
    return os.path.join(directory, names[-1]) if names else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--compile", default="false", choices=("true", "false"), help="train through torch.compile")
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "data/train"))
    parser.add_argument("--validation", default=os.environ.get("SM_CHANNEL_VALIDATION"))
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    parser.add_argument(
        "--checkpoint-dir",
        default=os.environ.get("TRAINING_CHECKPOINT_DIR", "/opt/ml/checkpoints" if os.path.isdir("/opt/ml") else ""),
    )
    args = parser.parse_args()

    torch.manual_seed(0)
    x, y = load(args.train)
    cut = int(len(y) * 0.8)
    if args.validation:
        x_held_out, y_held_out = load(args.validation)
        x, y, cut = torch.cat([x, x_held_out]), torch.cat([y, y_held_out]), len(y)
    mean, std = x[:cut].mean(dim=0), x[:cut].std(dim=0) + 1e-6
    x = (x - mean) / std
    train, (x_val, y_val) = TensorDataset(x[:cut], y[:cut]), (x[cut:], y[cut:])

    net = nn.Sequential(
        nn.Linear(x.shape[1], args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, int(y.max()) + 1),
    )  # fmt: skip
    model = torch.compile(net) if args.compile == "true" else net  # checkpoints hold net's own names
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    start_epoch = 0
    checkpoint = newest_checkpoint(args.checkpoint_dir)
    if checkpoint:
        state = torch.load(checkpoint, weights_only=True)
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])  # the same shuffles as a run never interrupted
        start_epoch = state["epoch"] + 1
        print(f"resuming from {checkpoint}: continuing at epoch {start_epoch}", flush=True)

    val_loss = val_accuracy = None
    for epoch in range(start_epoch, args.epochs):
        model.train()
        total = 0.0
        for inputs, labels in DataLoader(train, batch_size=args.batch_size, shuffle=True):
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), labels)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(labels)
        model.eval()
        with torch.no_grad():
            logits = model(x_val)
            val_loss = loss_fn(logits, y_val).item()
            val_accuracy = (logits.argmax(dim=1) == y_val).float().mean().item()
        print(
            f"epoch={epoch} train_loss={total / len(train):.4f} val_loss={val_loss:.4f} val_accuracy={val_accuracy:.4f}",
            flush=True,
        )
        if args.checkpoint_dir:
            os.makedirs(args.checkpoint_dir, exist_ok=True)
            path = os.path.join(args.checkpoint_dir, f"checkpoint-{epoch:04d}.pt")
            state = {"epoch": epoch, "model": net.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}
            torch.save(state, path + ".tmp")
            os.replace(path + ".tmp", path)

    if val_accuracy is None:  # resumed with every epoch done: the checkpoint's model is the result
        model.eval()
        with torch.no_grad():
            logits = model(x_val)
            val_loss = loss_fn(logits, y_val).item()
            val_accuracy = (logits.argmax(dim=1) == y_val).float().mean().item()
        print(f"epoch={args.epochs - 1} val_loss={val_loss:.4f} val_accuracy={val_accuracy:.4f}", flush=True)
    os.makedirs(args.model_dir, exist_ok=True)
    torch.save(net.state_dict(), os.path.join(args.model_dir, "model.pt"))


if __name__ == "__main__":
    main()
