"""MLP regressor for numpy arrays: x.npy (N, features) and y.npy (N,) in SM_CHANNEL_TRAIN and SM_CHANNEL_VALIDATION.

Plain PyTorch. The features are standardised with the training set's statistics; the targets are used as they come
(``--normalize-targets 1``: standardised with the training set's too, the predictions scaled back for the metrics).
One line per epoch for the metric regexes:

    epoch 3 train_loss 0.4120 validation:rmse 0.6401 validation:mae 0.5012

    python tabular_regression.py --lr 0.001 --optimizer adam --loss huber --epochs 30
"""
import argparse
import math
import os

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
p.add_argument("--loss", default="mse", choices=["mse", "huber"])
p.add_argument("--epochs", type=int, default=30)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--activation", default="relu", choices=["relu", "tanh", "elu"])
p.add_argument("--weight-decay", type=float, default=0.0)
p.add_argument("--grad-clip", type=float, default=0.0)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--normalize-targets", type=int, default=0, choices=[0, 1])
args = p.parse_args()
torch.manual_seed(args.seed)


def load(name):
    folder = os.environ[f"SM_CHANNEL_{name.upper()}"]
    x = np.load(os.path.join(folder, "x.npy")).astype(np.float32)
    y = np.load(os.path.join(folder, "y.npy")).astype(np.float32)
    return torch.from_numpy(x.reshape(len(x), -1)), torch.from_numpy(y.reshape(-1, 1))


x_train, y_train = load("train")
x_val, y_val = load("validation")
mean, std = x_train.mean(0), x_train.std(0) + 1e-6
x_train, x_val = (x_train - mean) / std, (x_val - mean) / std
target_mean, target_std = (y_train.mean(), y_train.std() + 1e-6) if args.normalize_targets else (0.0, 1.0)
y_train = (y_train - target_mean) / target_std

act = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU}[args.activation]
layers, width = [], x_train.shape[1]
for _ in range(args.layers):
    layers += [nn.Linear(width, args.hidden), act()]
    width = args.hidden
model = nn.Sequential(*layers, nn.Linear(width, 1))

criterion = nn.MSELoss() if args.loss == "mse" else nn.HuberLoss(delta=1.0)
if args.optimizer == "sgd":
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.weight_decay)
else:
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train), batch_size=args.batch_size,
                                     shuffle=True)
for epoch in range(args.epochs):
    model.train()
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        if args.grad_clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        total += loss.item() * len(xb)
    model.eval()
    with torch.no_grad():
        error = model(x_val) * target_std + target_mean - y_val
        rmse = math.sqrt(error.pow(2).mean().item())
        mae = error.abs().mean().item()
    print(f"epoch {epoch} train_loss {total / len(x_train):.4f} validation:rmse {rmse:.4f} validation:mae {mae:.4f}",
          flush=True)
