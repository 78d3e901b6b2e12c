"""dry_run (docs/api.md, "Hook from Python constructor": "when dry run is set, behavior is only described in the log
file, and tensors are not actually saved")."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, dry_run=True, save_all=True, save_config=smd.SaveConfig(save_interval=1))
torch.manual_seed(27)
net = nn.Sequential(nn.Linear(3, 2))
criterion = nn.MSELoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(3):
    optimizer.zero_grad()
    criterion(net(torch.randn(4, 3)), torch.randn(4, 2)).backward()
    optimizer.step()
hook.close()
