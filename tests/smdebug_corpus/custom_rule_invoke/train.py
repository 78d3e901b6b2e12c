"""Saves gradients every other step; the loss is scaled up a thousandfold at step 6 (a bad batch)."""

import sys

import torch
import torch.nn as nn

import smdebug.pytorch as smd

hook = smd.Hook(out_dir=sys.argv[1], save_config=smd.SaveConfig(save_interval=2), include_collections=["gradients", "losses"])
torch.manual_seed(6)
net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.0)  # the weights stay put: the gradients are comparable
hook.register_module(net)
hook.register_loss(criterion)
for step in range(10):
    optimizer.zero_grad()
    loss = criterion(net(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
    (loss * (1000.0 if step == 6 else 1.0)).backward()
    optimizer.step()
hook.close()
