"""smdebug's examples/pytorch/scripts/pytorch_hook_demos.py, --hook-type weights-bias-gradients: a hook with a save
configuration and nothing else ("logs ONLY weights, biases, and gradients", its comment says), on a model trained with
a functional loss (F.nll_loss). No script-side close: the process's exit closes the hook."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

from smdebug.pytorch import Hook, SaveConfig


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.add_module("conv1", nn.Conv2d(1, 4, 3, 1))
        self.add_module("relu0", nn.ReLU())
        self.add_module("fc1", nn.Linear(4 * 6 * 6, 10))

    def forward(self, x):
        x = self.relu0(self.conv1(x))
        x = x.view(-1, 4 * 6 * 6)
        return F.log_softmax(self.fc1(x), dim=1)


parser = argparse.ArgumentParser()
parser.add_argument("--output-uri", type=str, required=True)
args = parser.parse_args()

torch.manual_seed(19)
model = Net()
hook = Hook(out_dir=args.output_uri, save_config=SaveConfig(save_steps=[i * 5 for i in range(20)]))
hook.register_hook(model)
optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
model.train()
for batch_idx in range(11):
    data, target = torch.randn(4, 1, 8, 8), torch.randint(0, 10, (4,))
    optimizer.zero_grad()
    loss = F.nll_loss(model(data), target)
    loss.backward()
    optimizer.step()
