"""MLP on small images or feature vectors, instrumented with SageMaker Debugger (smdebug) as its docs show.

Data: the "training" and "test" channels (SM_CHANNEL_TRAINING, SM_CHANNEL_TEST), each with x.npy and y.npy.
The held-out accuracy goes to the debugger as the scalar "val_acc" and to the log as a percentage.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import smdebug.pytorch as smd


def str2bool(v):
    return str(v).strip().lower() in ("1", "true", "yes", "y", "on")


def get_args():
    parser = argparse.ArgumentParser(description="digits MLP")
    parser.add_argument("--lr", type=str, default="0.01", help="learning rate, e.g. 0.01 or 1e-3")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--activation", type=str, default="relu", help="a torch.nn.functional name")
    parser.add_argument("--use-bn", type=str2bool, default=False)
    parser.add_argument("--optim", type=str, default="sgd", help="sgd or adam")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--weight-scale", type=float, default=1.0, help="scales the default init of every layer")
    parser.add_argument("--standardize", type=str2bool, default=True)
    parser.add_argument("--seed", type=int, default=123)
    return parser.parse_args()


class Net(nn.Module):
    def __init__(self, n_in, n_out, width, layers, activation, use_bn):
        super().__init__()
        dims = [n_in] + [width] * layers
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.norms = nn.ModuleList(nn.BatchNorm1d(width) if use_bn else nn.Identity() for _ in range(layers))
        self.out = nn.Linear(dims[-1], n_out)
        self.activation = activation

    def forward(self, x):
        f = getattr(torch, self.activation, None) if self.activation in ("tanh", "sigmoid") else getattr(F, self.activation)
        for layer, norm in zip(self.hidden, self.norms):
            x = f(norm(layer(x)))
        return self.out(x)


def load(channel):
    path = os.environ.get(f"SM_CHANNEL_{channel.upper()}", f"data/{channel}")
    x = np.load(f"{path}/x.npy").astype(np.float32)
    return torch.from_numpy(x.reshape(x.shape[0], -1)), torch.from_numpy(np.load(f"{path}/y.npy").astype(np.int64))


def main():
    args = get_args()
    lr = float(args.lr)
    torch.manual_seed(args.seed)
    x_train, y_train = load("training")
    x_test, y_test = load("test")
    if args.standardize:
        mean, std = x_train.mean(0), x_train.std(0).clamp_min(1e-6)
        x_train, x_test = (x_train - mean) / std, (x_test - mean) / std

    model = Net(x_train.shape[1], int(y_train.max()) + 1, args.width, args.layers, args.activation, args.use_bn)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(args.weight_scale)
    loss_fn = nn.CrossEntropyLoss()
    if args.optim == "adam":
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    hook = smd.Hook.create_from_json_file()
    hook.register_module(model)
    hook.register_loss(loss_fn)

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train), batch_size=args.batch,
                                         shuffle=True)
    for epoch in range(1, args.epochs + 1):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            acc = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
        hook.save_scalar("val_acc", acc)
        print(f"Epoch {epoch}/{args.epochs} - loss {loss.item():.4f} - validation accuracy {100 * acc:.2f}%", flush=True)


if __name__ == "__main__":
    main()
