"""Turning a collection saved by default off, as docs/api.md ("Default collections saved") says to:
``hook.get_collection("losses").save_config.end_step = 0``; the weights are saved every other step."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=2), include_collections=["weights"])
hook.get_collection("losses").save_config.end_step = 0
torch.manual_seed(20)
net = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
criterion = nn.CrossEntropyLoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(5):
    optimizer.zero_grad()
    criterion(net(torch.randn(2, 3)), torch.randint(0, 2, (2,))).backward()
    optimizer.step()
hook.close()
