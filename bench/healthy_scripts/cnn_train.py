"""A small convolutional network for image classification. The debugger is set up as smdebug's README shows it
(``smd.Hook.create_from_json_file()``, ``register_hook``, ``register_loss``); the script never calls set_mode, so
its evaluation batches are steps of the same (global) mode as its training batches, as in many real scripts.

Images come from SM_CHANNEL_TRAIN / SM_CHANNEL_VALIDATION (x.npy, y.npy): (N, 1, 8, 8) digits with pixel values
0..16, or (N, 32, 32, 3) uint8 pictures. Pixels are scaled to [0, 1]; --standardize also centres each channel.
"""

import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import smdebug.pytorch as smd


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--activation", default="relu", choices=["relu", "gelu", "elu", "tanh"])
    p.add_argument("--norm", default="batch", choices=["batch", "group", "none"])
    p.add_argument("--channels", type=int, default=32)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adam", "adamw"])
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--step-lr", type=int, default=0, help="divide the rate by 10 every this many epochs (0: never)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--standardize", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def read_images(channel):
    x = np.load(os.path.join(channel, "x.npy"))
    y = np.load(os.path.join(channel, "y.npy")).astype(np.int64)
    if x.ndim == 4 and x.shape[-1] == 3:  # NHWC pictures
        x = x.transpose(0, 3, 1, 2)
    x = x.astype(np.float32)
    x /= 255.0 if x.max() > 16 else 16.0
    return torch.tensor(x), torch.tensor(y)


class ConvNet(nn.Module):
    def __init__(self, in_channels, size, classes, args):
        super().__init__()
        c = args.channels
        self.conv1 = nn.Conv2d(in_channels, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, 2 * c, 3, padding=1)
        if args.norm == "batch":
            self.n1, self.n2 = nn.BatchNorm2d(c), nn.BatchNorm2d(2 * c)
        elif args.norm == "group":
            self.n1, self.n2 = nn.GroupNorm(4, c), nn.GroupNorm(8, 2 * c)
        else:
            self.n1 = self.n2 = nn.Identity()
        self.act = args.activation
        self.drop = nn.Dropout(args.dropout)
        self.fc = nn.Linear(2 * c * (size // 4) ** 2, classes)

    def activation(self, x):
        return {"relu": F.relu, "gelu": F.gelu, "elu": F.elu, "tanh": torch.tanh}[self.act](x)

    def forward(self, x):
        x = F.max_pool2d(self.activation(self.n1(self.conv1(x))), 2)
        x = F.max_pool2d(self.activation(self.n2(self.conv2(x))), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


def main():
    args = get_args()
    torch.manual_seed(args.seed)
    x_train, y_train = read_images(os.environ["SM_CHANNEL_TRAIN"])
    x_val, y_val = read_images(os.environ["SM_CHANNEL_VALIDATION"])
    if args.standardize:
        mean = x_train.mean(dim=(0, 2, 3), keepdim=True)
        std = x_train.std(dim=(0, 2, 3), keepdim=True)
        x_train, x_val = (x_train - mean) / std, (x_val - mean) / std

    net = ConvNet(x_train.shape[1], x_train.shape[2], int(y_train.max()) + 1, args)
    criterion = nn.CrossEntropyLoss()
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.weight_decay)
    elif args.optimizer == "adam":
        opt = torch.optim.Adam(net.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    else:
        opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = torch.optim.lr_scheduler.StepLR(opt, args.step_lr, 0.1) if args.step_lr else None

    hook = smd.Hook.create_from_json_file()
    hook.register_hook(net)
    hook.register_loss(criterion)

    train_data = torch.utils.data.TensorDataset(x_train, y_train)
    for epoch in range(args.epochs):
        net.train()
        for xb, yb in torch.utils.data.DataLoader(train_data, batch_size=args.batch_size, shuffle=True):
            opt.zero_grad()
            loss = criterion(net(xb), yb)
            loss.backward()
            opt.step()
        if sched:
            sched.step()
        net.eval()
        correct = 0
        with torch.no_grad():
            for start in range(0, len(y_val), 500):
                out = net(x_val[start:start + 500])
                criterion(out, y_val[start:start + 500])
                correct += (out.argmax(1) == y_val[start:start + 500]).sum().item()
        acc = correct / len(y_val)
        hook.save_scalar("validation:accuracy", acc)
        print(f"epoch {epoch}: validation accuracy {acc:.4f}", flush=True)


if __name__ == "__main__":
    main()
