"""save_all on a model with nested modules, a layer applied twice in one forward pass (shared weights) and a recurrent
layer that returns a tuple: the names smdebug gives module inputs and outputs (docs/api.md: <module>_input_<i>,
<module>_output_<i>)."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(input_size=3, hidden_size=4, batch_first=True)
        self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())

    def forward(self, x):
        outputs, hidden = self.gru(x)
        return self.block(outputs[:, -1])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.shared = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        h = self.encoder(x)
        h = torch.relu(self.shared(h))
        h = torch.relu(self.shared(h))  # the same layer again
        return self.head(h)


parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(out_dir=args.out_dir, save_config=smd.SaveConfig(save_steps=[1, 3]), save_all=True)
torch.manual_seed(26)
model = Net()
criterion = nn.CrossEntropyLoss()
hook.register_module(model)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    optimizer.zero_grad()
    criterion(model(torch.randn(2, 5, 3)), torch.randint(0, 2, (2,))).backward()
    optimizer.step()
hook.close()
