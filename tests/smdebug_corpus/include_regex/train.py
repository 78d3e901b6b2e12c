"""The hook's include_regex (docs/api.md, "Hook from Python constructor"): tensors whose names match are saved in the
"default" collection; no include_collections given, so the hook's defaults (losses) are saved besides."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import smdebug.pytorch as smd


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 10)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(10, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(self.relu(self.fc1(x))), dim=1)


parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=2), include_regex=["relu", "fc2"])
torch.manual_seed(13)
model = Net()
criterion = nn.NLLLoss()
hook.register_module(model)
hook.register_loss(criterion)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for _ in range(5):
    optimizer.zero_grad()
    criterion(model(torch.randn(6, 12)), torch.randint(0, 4, (6,))).backward()
    optimizer.step()
hook.close()
