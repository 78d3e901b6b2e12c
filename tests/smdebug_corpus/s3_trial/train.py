"""A hook whose out_dir is an S3 URI (docs/analysis.md: "you can pass either a local path or an S3 path")."""

import sys

import torch
import torch.nn as nn

import smdebug.pytorch as smd

hook = smd.Hook(out_dir=sys.argv[1], save_config=smd.SaveConfig(save_interval=2), include_collections=["weights", "gradients", "losses"])
torch.manual_seed(5)
net = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
hook.register_module(net)
hook.register_loss(criterion)
for _ in range(6):
    optimizer.zero_grad()
    criterion(net(torch.randn(4, 5)), torch.randint(0, 2, (4,))).backward()
    optimizer.step()
hook.close()
