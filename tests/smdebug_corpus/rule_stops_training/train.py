"""A training script as smdebug's docs show it; a bad batch (NaN input) at step 5 makes the gradients NaN.
The rules are not in the script: the job's DebugRuleConfigurations (ExplodingTensor with StopTraining) are."""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=100), include_collections=["gradients", "losses"])
torch.manual_seed(7)
net = nn.Sequential(nn.Linear(6, 16), nn.ELU(), nn.Linear(16, 4))
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
hook.register_module(net)
hook.register_loss(criterion)
for step in range(20):
    inputs, labels = torch.randn(32, 6), torch.randint(0, 4, (32,))
    if step == 5:
        inputs[0, 0] = float("nan")
    optimizer.zero_grad()
    criterion(net(inputs), labels).backward()
    optimizer.step()
    print(f"step {step} done", flush=True)
hook.close()
