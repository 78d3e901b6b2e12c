"""Saves the weights every other step; one batch with a thousandfold loss (step 6) moves them far."""

import sys

import torch
import torch.nn as nn

import smdebug.pytorch as smd

hook = smd.Hook(out_dir=sys.argv[1], save_config=smd.SaveConfig(save_interval=2), include_collections=["weights", "losses"])
torch.manual_seed(24)
net = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
hook.register_module(net)
hook.register_loss(criterion)
for step in range(11):
    optimizer.zero_grad()
    loss = criterion(net(torch.randn(8, 5)), torch.randint(0, 2, (8,)))
    (loss * (1000.0 if step == 5 else 1.0)).backward()
    optimizer.step()
hook.close()
