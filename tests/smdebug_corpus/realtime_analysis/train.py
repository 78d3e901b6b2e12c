"""A training job that saves every step and takes its time, so an analysis can follow it while it runs."""

import argparse
import time

import torch
import torch.nn as nn
import torch.optim as optim

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
parser.add_argument("--steps", type=int, default=10)
parser.add_argument("--seconds_per_step", type=float, default=0.3)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["weights", "losses"])
torch.manual_seed(4)
net = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 2))
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.1)
hook.register_module(net)
hook.register_loss(criterion)
hook.set_mode(smd.modes.TRAIN)
for step in range(args.steps):
    optimizer.zero_grad()
    criterion(net(torch.randn(4, 6)), torch.randint(0, 2, (4,))).backward()
    optimizer.step()
    print(f"step {step}", flush=True)
    time.sleep(args.seconds_per_step)
hook.close()
