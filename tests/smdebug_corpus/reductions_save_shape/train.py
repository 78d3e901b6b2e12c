"""save_shape (docs/api.md "ReductionConfig"): the gradients' shapes and L2 norms saved without the gradients; the
weights in full, with their shapes."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=smd.SaveConfig(save_interval=3),
    include_collections=["weights", "gradients", "losses"],
)
hook.get_collection("gradients").reduction_config = smd.ReductionConfig(norms=["l2"], save_shape=True)
hook.get_collection("weights").reduction_config = smd.ReductionConfig(save_raw_tensor=True, save_shape=True)
torch.manual_seed(15)
net = nn.Sequential(nn.Conv1d(2, 3, kernel_size=3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 6, 2))
criterion = nn.CrossEntropyLoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(7):
    optimizer.zero_grad()
    criterion(net(torch.randn(5, 2, 8)), torch.randint(0, 2, (5,))).backward()
    optimizer.step()
hook.close()
