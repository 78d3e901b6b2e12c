"""Feed-forward classifier for numpy arrays (x.npy, y.npy in SM_CHANNEL_TRAIN and SM_CHANNEL_VALIDATION).

Plain PyTorch, nothing but torch and numpy. Logs one line per epoch for the console / metric regexes:

    epoch=3 loss=0.4120 val_acc=0.9100

    python tabular_logline.py --learning-rate 0.001 --n-epochs 10 --hidden-units 64 --n-layers 2 --act relu
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--learning-rate", type=float, default=1e-3)
parser.add_argument("--n-epochs", type=int, default=10)
parser.add_argument("--hidden-units", type=int, default=64)
parser.add_argument("--n-layers", type=int, default=2)
parser.add_argument("--act", default="relu", choices=["relu", "leaky_relu", "elu", "tanh", "sigmoid"])
parser.add_argument("--batchnorm", type=int, default=0)
parser.add_argument("--opt", default="adam", choices=["adam", "sgd"])
parser.add_argument("--bs", type=int, default=64)
parser.add_argument("--init-gain", type=float, default=1.0, help="multiplies the Xavier gain of every layer")
parser.add_argument("--scale-inputs", type=int, default=1, help="standardise features with the train set's stats")
parser.add_argument("--clip-norm", type=float, default=0.0)
parser.add_argument("--seed", type=int, default=42)
args = parser.parse_args()

torch.manual_seed(args.seed)
np.random.seed(args.seed)


def read(channel):
    folder = os.environ["SM_CHANNEL_" + channel.upper()]
    x = np.load(os.path.join(folder, "x.npy")).astype("float32")
    y = np.load(os.path.join(folder, "y.npy")).astype("int64")
    return x.reshape(len(x), -1), y


X_tr, y_tr = read("train")
X_va, y_va = read("validation")
if args.scale_inputs:
    mu, sd = X_tr.mean(0), X_tr.std(0) + 1e-8
    X_tr, X_va = (X_tr - mu) / sd, (X_va - mu) / sd
X_tr, y_tr, X_va, y_va = map(torch.tensor, (X_tr, y_tr, X_va, y_va))
n_classes = int(max(y_tr.max(), y_va.max())) + 1

act = {"relu": nn.ReLU, "leaky_relu": nn.LeakyReLU, "elu": nn.ELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}[args.act]
layers, d = [], X_tr.shape[1]
for _ in range(args.n_layers):
    layers += [nn.Linear(d, args.hidden_units)]
    if args.batchnorm:
        layers += [nn.BatchNorm1d(args.hidden_units)]
    layers += [act()]
    d = args.hidden_units
layers += [nn.Linear(d, n_classes)]
net = nn.Sequential(*layers)
gain_name = args.act if args.act in ("relu", "leaky_relu", "tanh", "sigmoid") else "linear"
for m in net.modules():
    if isinstance(m, nn.Linear):
        nn.init.xavier_normal_(m.weight, gain=args.init_gain * nn.init.calculate_gain(gain_name))
        nn.init.zeros_(m.bias)

if args.opt == "sgd":
    opt = torch.optim.SGD(net.parameters(), lr=args.learning_rate, momentum=0.9)
else:
    opt = torch.optim.Adam(net.parameters(), lr=args.learning_rate)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(args.n_epochs):
    net.train()
    perm = torch.randperm(len(y_tr))
    running = 0.0
    for i in range(0, len(perm), args.bs):
        idx = perm[i:i + args.bs]
        opt.zero_grad()
        loss = loss_fn(net(X_tr[idx]), y_tr[idx])
        loss.backward()
        if args.clip_norm > 0:
            nn.utils.clip_grad_norm_(net.parameters(), args.clip_norm)
        opt.step()
        running += loss.item() * len(idx)
    net.eval()
    with torch.no_grad():
        val_acc = (net(X_va).argmax(1) == y_va).float().mean().item()
    print(f"epoch={epoch} loss={running / len(y_tr):.4f} val_acc={val_acc:.4f}", flush=True)
