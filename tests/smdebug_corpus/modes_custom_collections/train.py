"""Modes, a functional loss, a custom collection, save_scalar and save_tensor, as docs/api.md and
docs/pytorch.md ("Functional Loss Example") describe them."""

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import smdebug.pytorch as smd
from smdebug import SaveConfig, SaveConfigMode, modes


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=SaveConfig(
        mode_save_configs={
            modes.TRAIN: SaveConfigMode(save_interval=3),
            modes.EVAL: SaveConfigMode(save_interval=1),
        }
    ),
    include_collections=["weights", "losses", "relu_activations"],
)
hook.get_collection("relu_activations").include("relu_output")
hook.get_collection("relu_activations").save_config = SaveConfig(save_steps=[1, 2])

torch.manual_seed(2)
net = Model()
optimizer = optim.SGD(net.parameters(), lr=0.05)
hook.register_module(net)

for epoch in range(2):
    hook.set_mode(modes.TRAIN)
    net.train()
    for batch in range(7):
        inputs, labels = torch.randn(10, 12), torch.randint(0, 3, (10,))
        optimizer.zero_grad()
        loss = F.cross_entropy(net(inputs), labels)
        hook.record_tensor_value(tensor_name="loss", tensor_value=loss)
        loss.backward()
        optimizer.step()
        hook.save_tensor("batch_labels", labels.numpy().astype(np.float32), "custom")

    hook.set_mode(modes.EVAL)
    net.eval()
    correct = 0
    with torch.no_grad():
        for batch in range(4):
            inputs, labels = torch.randn(10, 12), torch.randint(0, 3, (10,))
            outputs = net(inputs)
            hook.record_tensor_value(tensor_name="loss", tensor_value=F.cross_entropy(outputs, labels))
            correct += int((outputs.argmax(dim=1) == labels).sum())
    hook.save_scalar("accuracy", correct / 40, sm_metric=True)
hook.close()
