"""Training and evaluation loops whose loss inputs (the predictions and the labels) are saved in a collection of the
script's own (AWS's pytorch_iterative_model_pruning example saves them for its accuracy rule); the model gets worse
in the second epoch (its learning rate is raised a hundredfold)."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_interval=1), include_collections=["loss_inputs"])
hook.get_collection("loss_inputs").include("CrossEntropyLoss_input_*")
torch.manual_seed(25)
centers = torch.randn(3, 4) * 3
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
criterion = nn.CrossEntropyLoss()
hook.register_module(net)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)


def batch():
    labels = torch.randint(0, 3, (16,))
    return centers[labels] + torch.randn(16, 4), labels


for epoch, lr in enumerate([0.05, 5.0]):
    for group in optimizer.param_groups:
        group["lr"] = lr
    hook.set_mode(smd.modes.TRAIN)
    net.train()
    for _ in range(6):
        inputs, labels = batch()
        optimizer.zero_grad()
        criterion(net(inputs), labels).backward()
        optimizer.step()
    hook.set_mode(smd.modes.EVAL)
    net.eval()
    with torch.no_grad():
        for _ in range(3):
            inputs, labels = batch()
            criterion(net(inputs), labels)
hook.close()
