"""The hook from its Python constructor (docs/api.md "Hook from Python constructor", docs/pytorch.md
"Module Loss Example"), saving reductions instead of full tensors."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import smdebug.pytorch as smd


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return F.relu(self.fc(x))


parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
parser.add_argument("--steps", type=int, default=12)
args = parser.parse_args()

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=smd.SaveConfig(save_interval=5),
    reduction_config=smd.ReductionConfig(reductions=["max", "mean"], abs_reductions=["mean"], norms=["l2"]),
    include_collections=["weights", "gradients", "losses", "biases"],
)
# biases: full tensors and reductions
hook.get_collection("biases").reduction_config = smd.ReductionConfig(reductions=["mean"], save_raw_tensor=True)

torch.manual_seed(1)
net = Model()
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(net.parameters(), lr=0.01)
hook.register_module(net)
hook.register_loss(criterion)

for step in range(args.steps):
    inputs, labels = torch.randn(8, 64), torch.randint(0, 10, (8,))
    optimizer.zero_grad()
    outputs = net(inputs)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
hook.close()
