"""Every reduction and norm docs/api.md lists ("ReductionConfig"), saved instead of the tensors; a regression model
whose last layer has a single output (a one-element bias)."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=smd.SaveConfig(save_interval=4),
    reduction_config=smd.ReductionConfig(
        reductions=["min", "max", "mean", "std", "variance", "sum", "prod"],
        abs_reductions=["mean", "max"],
        norms=["l1", "l2"],
        abs_norms=["l1"],
    ),
    include_collections=["weights", "biases", "gradients", "losses"],
)
torch.manual_seed(14)
net = nn.Sequential(nn.Linear(6, 5), nn.Sigmoid(), nn.Linear(5, 1))
criterion = nn.MSELoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(9):
    inputs = torch.randn(8, 6)
    optimizer.zero_grad()
    criterion(net(inputs), inputs.sum(dim=1, keepdim=True)).backward()
    optimizer.step()
hook.close()
