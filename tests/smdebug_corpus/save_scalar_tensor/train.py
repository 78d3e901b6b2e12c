"""save_scalar and save_tensor (docs/api.md, "Common Hook API"): a scalar every training step, a metric per epoch
(sm_metric), tensors of the script's own in the default collection (save_tensor's default), one saved before the
forward pass, one after it."""

import argparse

import numpy as np
import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=3), include_collections=["losses"])
torch.manual_seed(16)
net = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 3))
criterion = nn.CrossEntropyLoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

for epoch in range(2):
    hook.set_mode(smd.modes.TRAIN)
    for step in range(5):
        inputs, labels = torch.randn(4, 5), torch.randint(0, 3, (4,))
        hook.save_tensor("input_means", inputs.mean(dim=0).numpy())
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
        hook.save_scalar("train_loss", loss.item())
    hook.set_mode(smd.modes.EVAL)
    correct = 0
    with torch.no_grad():
        for step in range(2):
            inputs, labels = torch.randn(4, 5), torch.randint(0, 3, (4,))
            outputs = net(inputs)
            criterion(outputs, labels)
            hook.save_tensor("probabilities", torch.softmax(outputs, dim=1))
            correct += int((outputs.argmax(dim=1) == labels).sum())
    hook.save_scalar("epoch_accuracy", np.float32(correct / 8), sm_metric=True)
hook.close()
