"""Recurrent sequence classifier (GRU or LSTM) on numpy arrays: x.npy (N, time, features) and y.npy (N,) in
SM_CHANNEL_TRAIN and SM_CHANNEL_VALIDATION. Plain PyTorch; the last hidden state goes to a linear head.

    python sequence_rnn.py --cell lstm --optimizer rmsprop --lr 0.002 --clip 1.0 --epochs 10

Prints one line per epoch: ``[epoch 3/10] loss=0.412 val_accuracy=0.913``.
"""
import argparse
import os

import numpy as np
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--cell", choices=["gru", "lstm"], default="gru")
parser.add_argument("--hidden", type=int, default=64)
parser.add_argument("--num-layers", type=int, default=1)
parser.add_argument("--optimizer", choices=["sgd", "rmsprop", "adam"], default="adam")
parser.add_argument("--lr", type=float, default=0.002)
parser.add_argument("--clip", type=float, default=0.0, help="clip the gradient norm to this (0: off)")
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
torch.manual_seed(args.seed)


def load(channel):
    path = os.environ[f"SM_CHANNEL_{channel.upper()}"]
    x = torch.from_numpy(np.load(os.path.join(path, "x.npy")).astype(np.float32))
    y = torch.from_numpy(np.load(os.path.join(path, "y.npy")).astype(np.int64))
    return x, y


class SequenceClassifier(nn.Module):
    def __init__(self, features, classes):
        super().__init__()
        rnn = nn.GRU if args.cell == "gru" else nn.LSTM
        self.rnn = rnn(features, args.hidden, num_layers=args.num_layers, batch_first=True)
        self.head = nn.Linear(args.hidden, classes)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


x_train, y_train = load("train")
x_val, y_val = load("validation")
model = SequenceClassifier(x_train.shape[-1], int(y_train.max()) + 1)
if args.optimizer == "sgd":
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
elif args.optimizer == "rmsprop":
    opt = torch.optim.RMSprop(model.parameters(), lr=args.lr)
else:
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(1, args.epochs + 1):
    model.train()
    order = torch.randperm(len(y_train))
    losses = []
    for start in range(0, len(order), args.batch_size):
        batch = order[start:start + args.batch_size]
        opt.zero_grad()
        loss = loss_fn(model(x_train[batch]), y_train[batch])
        loss.backward()
        if args.clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        accuracy = (model(x_val).argmax(-1) == y_val).float().mean().item()
    print(f"[epoch {epoch}/{args.epochs}] loss={np.mean(losses):.3f} val_accuracy={accuracy:.3f}", flush=True)
