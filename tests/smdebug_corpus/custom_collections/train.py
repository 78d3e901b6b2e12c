"""Collections of the script's own (docs/api.md, "Collection"): one made with get_collection and include, one built as
a Collection object and added with add_collection, each with its own save and reduction configuration."""

import argparse

import torch
import torch.nn as nn

import smdebug.pytorch as smd


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(9, 7)
        self.act = nn.ELU()
        self.fc2 = nn.Linear(7, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
args = parser.parse_args()

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=smd.SaveConfig(save_interval=5),
    include_collections=["first_layer", "head_norms", "losses"],
)
hook.get_collection("first_layer").include(["fc1"])
head = smd.Collection(
    "head_norms",
    include_regex=["fc2", "act_output"],
    save_config=smd.SaveConfig(save_interval=2),
    reduction_config=smd.ReductionConfig(norms=["l2"], abs_reductions=["mean"]),
)
hook.add_collection(head)
torch.manual_seed(17)
model = Net()
criterion = nn.CrossEntropyLoss()
hook.register_module(model)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(7):
    optimizer.zero_grad()
    criterion(model(torch.randn(4, 9)), torch.randint(0, 3, (4,))).backward()
    optimizer.step()
hook.close()
