"""A script-mode training script as AWS's SageMaker Debugger examples write it (pytorch_custom_container,
pytorch_model_debugging): the hook comes from the configuration file SageMaker writes into the container."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

import smdebug.pytorch as smd


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(20, 32)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return F.log_softmax(self.fc2(self.relu1(self.fc1(x))), dim=1)


def train(model, optimizer, hook, criterion, steps):
    model.train()
    hook.set_mode(smd.modes.TRAIN)
    for _ in range(steps):
        data, target = torch.rand(16, 20), torch.randint(0, 4, (16,))
        optimizer.zero_grad()
        loss = criterion(model(data), target)
        loss.backward()
        optimizer.step()


def test(model, hook, criterion, steps):
    model.eval()
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        for _ in range(steps):
            data, target = torch.rand(16, 20), torch.randint(0, 4, (16,))
            criterion(model(data), target)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train-steps", type=int, default=8)
    parser.add_argument("--eval-steps", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = Net()
    # SageMaker Debugger: create the hook from the JSON configuration SageMaker puts in the container
    hook = smd.Hook.create_from_json_file()
    hook.register_hook(model)
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    # SageMaker Debugger: register the loss module to save the losses
    criterion = nn.NLLLoss()
    hook.register_loss(criterion)
    for _ in range(args.epochs):
        train(model, optimizer, hook, criterion, args.train_steps)
        test(model, hook, criterion, args.eval_steps)
    print("Training is complete")


if __name__ == "__main__":
    main()
