"""Transfer learning as AWS's examples and PyTorch's tutorial write it: a pretrained feature extractor whose parameters
are frozen (requires_grad False), and a new head that is trained. The hook watches the whole model."""

import argparse

import torch
import torch.nn as nn
import torch.optim as optim

import smdebug.pytorch as smd


class TransferModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 12), nn.ReLU())
        self.classifier = nn.Linear(12, 3)

    def forward(self, x):
        return self.classifier(self.features(x))


parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

torch.manual_seed(11)
model = TransferModel()
for param in model.features.parameters():  # "pretrained": frozen
    param.requires_grad = False

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=smd.SaveConfig(save_interval=3),
    include_collections=["weights", "biases", "gradients", "losses"],
)
hook.register_module(model)
criterion = nn.CrossEntropyLoss()
hook.register_loss(criterion)
optimizer = optim.SGD(model.classifier.parameters(), lr=0.1, momentum=0.9)
for step in range(8):
    inputs, labels = torch.randn(8, 16), torch.randint(0, 3, (8,))
    optimizer.zero_grad()
    loss = criterion(model(inputs), labels)
    loss.backward()
    optimizer.step()
hook.close()
