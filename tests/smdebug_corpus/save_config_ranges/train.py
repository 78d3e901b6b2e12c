"""start_step, end_step and save_steps together (docs/api.md "SaveConfig" examples), and a collection of the built-in
ones with a save configuration of its own."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=smd.SaveConfig(save_interval=2, start_step=3, end_step=9, save_steps=[1, 11]),
    include_collections=["weights", "gradients", "losses"],
)
hook.get_collection("gradients").save_config = smd.SaveConfig(save_steps=[0, 5])
torch.manual_seed(18)
net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
criterion = nn.CrossEntropyLoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(13):
    optimizer.zero_grad()
    criterion(net(torch.randn(3, 4)), torch.randint(0, 2, (3,))).backward()
    optimizer.step()
hook.close()
