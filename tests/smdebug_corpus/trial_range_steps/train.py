"""A run whose analysis is restricted to a range of steps (docs/analysis.md, "Restricting analysis to a range of
steps": create_trial(path, range_steps=(2, 7))): weights and losses saved every step, training then evaluation."""

import sys

import torch
import torch.nn as nn

import smdebug.pytorch as smd

hook = smd.Hook(out_dir=sys.argv[1], save_config=smd.SaveConfig(save_interval=1), include_collections=["weights", "losses"])
torch.manual_seed(28)
net = nn.Sequential(nn.Linear(3, 2))
criterion = nn.CrossEntropyLoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
hook.set_mode(smd.modes.TRAIN)
for _ in range(6):
    optimizer.zero_grad()
    criterion(net(torch.randn(4, 3)), torch.randint(0, 2, (4,))).backward()
    optimizer.step()
hook.set_mode(smd.modes.EVAL)
with torch.no_grad():
    for _ in range(4):
        criterion(net(torch.randn(4, 3)), torch.randint(0, 2, (4,)))
hook.close()
