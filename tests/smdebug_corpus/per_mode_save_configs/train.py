"""A save configuration per mode (docs/api.md, "Specifying different configuration based on mode"), given to the hook
as a dict of modes: training, evaluation and prediction loops, each counting its own steps."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config={
        smd.modes.TRAIN: smd.SaveConfigMode(save_interval=4),
        smd.modes.EVAL: smd.SaveConfigMode(save_interval=2),
        smd.modes.PREDICT: smd.SaveConfigMode(save_steps=[1, 3]),
    },
    include_collections=["weights", "losses"],
)
torch.manual_seed(12)
net = nn.Sequential(nn.Linear(10, 8), nn.Tanh(), nn.Linear(8, 2))
criterion = nn.CrossEntropyLoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)

for epoch in range(2):
    hook.set_mode(smd.modes.TRAIN)
    net.train()
    for _ in range(6):
        optimizer.zero_grad()
        criterion(net(torch.randn(4, 10)), torch.randint(0, 2, (4,))).backward()
        optimizer.step()
    hook.set_mode(smd.modes.EVAL)
    net.eval()
    with torch.no_grad():
        for _ in range(3):
            criterion(net(torch.randn(4, 10)), torch.randint(0, 2, (4,)))

hook.set_mode(smd.modes.PREDICT)
with torch.no_grad():
    for _ in range(4):
        F.softmax(net(torch.randn(4, 10)), dim=1)
hook.close()
