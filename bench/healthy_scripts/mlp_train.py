"""An MLP classifier on array data, written the way SageMaker Debugger's documentation shows a PyTorch script:
the hook from the JSON file SageMaker writes, the model and loss registered, TRAIN and EVAL modes, the validation
accuracy saved as a scalar, labels and predicted classes saved for ClassImbalance.

    python mlp_train.py --activation tanh --optimizer sgd --lr 0.1 --epochs 20

Data: SM_CHANNEL_TRAIN and SM_CHANNEL_VALIDATION, each a directory with x.npy (N, ...) and y.npy (N,).
"""

import argparse
import os

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "elu": nn.ELU}
NORMS = {"none": None, "batch": nn.BatchNorm1d, "layer": nn.LayerNorm}


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--activation", choices=sorted(ACTIVATIONS), default="relu")
    parser.add_argument("--norm", choices=sorted(NORMS), default="none")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--schedule", choices=["none", "cosine", "step", "onecycle"], default="none")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN"))
    parser.add_argument("--validation", default=os.environ.get("SM_CHANNEL_VALIDATION"))
    return parser.parse_args()


def load(directory):
    x = np.load(os.path.join(directory, "x.npy")).astype(np.float32)
    y = np.load(os.path.join(directory, "y.npy")).astype(np.int64)
    return torch.from_numpy(x.reshape(len(x), -1)), torch.from_numpy(y)


def build_model(features, classes, args):
    layers = []
    width = features
    for _ in range(args.depth):
        layers.append(nn.Linear(width, args.hidden))
        if NORMS[args.norm] is not None:
            layers.append(NORMS[args.norm](args.hidden))
        layers.append(ACTIVATIONS[args.activation]())
        if args.dropout > 0:
            layers.append(nn.Dropout(args.dropout))
        width = args.hidden
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def make_optimizer(model, args):
    if args.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    if args.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    return torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay or 0.01)


def make_schedule(optimizer, args, steps_per_epoch):
    if args.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs), "epoch"
    if args.schedule == "step":
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(1, args.epochs // 3), gamma=0.1), "epoch"
    if args.schedule == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=steps_per_epoch), "batch"
    return None, None


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    x, y = load(args.train)
    x_val, y_val = load(args.validation)
    mean, std = x.mean(dim=0), x.std(dim=0) + 1e-6  # standardise with the training set's statistics
    x, x_val = (x - mean) / std, (x_val - mean) / std
    classes = int(y.max()) + 1

    model = build_model(x.shape[1], classes, args)
    criterion = nn.CrossEntropyLoss()
    optimizer = make_optimizer(model, args)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=args.batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(args.seed))
    scheduler, every = make_schedule(optimizer, args, len(loader))

    hook = smd.Hook.create_from_json_file()
    hook.register_module(model)
    hook.register_loss(criterion)

    for epoch in range(args.epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        total = 0.0
        for inputs, labels in loader:
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, labels)
            hook.save_tensor("labels", labels)
            hook.save_tensor("predictions", outputs.argmax(dim=1))
            loss.backward()
            optimizer.step()
            if every == "batch":
                scheduler.step()
            total += loss.item() * len(labels)
        if every == "epoch":
            scheduler.step()
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            outputs = model(x_val)
            val_loss = criterion(outputs, y_val).item()
            accuracy = (outputs.argmax(dim=1) == y_val).float().mean().item()
        hook.save_scalar("validation:accuracy", accuracy, sm_metric=True)
        print(f"epoch={epoch} train_loss={total / len(y):.4f} val_loss={val_loss:.4f} val_accuracy={accuracy:.4f}",
              flush=True)


if __name__ == "__main__":
    main()
