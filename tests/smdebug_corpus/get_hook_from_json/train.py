"""AWS's SageMaker Debugger scripts get the hook with ``smd.get_hook(create_if_not_exists=True)`` (the hook SageMaker
configured, or one from its JSON file), register the model and the loss only when there is one, and never close it."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2, 3)

    def forward(self, x):
        return self.fc(self.pool(torch.relu(self.conv(x))).flatten(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(29)
    model = Net()
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.get_hook(create_if_not_exists=True)
    if hook:
        hook.register_module(model)
        hook.register_loss(loss_fn)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(args.epochs):
        if hook:
            hook.set_mode(smd.modes.TRAIN)
        model.train()
        for _ in range(4):
            optimizer.zero_grad()
            loss_fn(model(torch.randn(3, 1, 6, 6)), torch.randint(0, 3, (3,))).backward()
            optimizer.step()
        if hook:
            hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            for _ in range(2):
                loss_fn(model(torch.randn(3, 1, 6, 6)), torch.randint(0, 3, (3,)))


if __name__ == "__main__":
    main()
