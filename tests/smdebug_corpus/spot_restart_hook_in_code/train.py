"""Managed spot training with the hook built in code (docs/api.md "Hook from Python constructor"; SageMaker's
"Use Checkpoints" guide): the script checkpoints every epoch into the checkpoint directory and resumes from the newest
checkpoint there. SageMaker writes the checkpoint configuration (env CHECKPOINT_CONFIG_FILE_PATH) that tells the hook
where the checkpoints are, so a restarted job's hook goes on numbering its steps from the checkpointed state.

``--die_after_step N`` ends the process at once after training step N (``os._exit``: nothing closed, as when the
instance is reclaimed). Without it the script runs to the end and prints the hook's states beside the checkpoints
(smdebug's keys of metadata.json) as its last line.
"""

import argparse
import json
import os

import torch
import torch.nn as nn
import torch.optim as optim

import smdebug.pytorch as smd

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
parser.add_argument("--checkpoint_dir", required=True)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batches", type=int, default=4)
parser.add_argument("--die_after_step", type=int, default=-1)
args = parser.parse_args()

torch.manual_seed(2)
net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.1)
start_epoch = 0
os.makedirs(args.checkpoint_dir, exist_ok=True)
found = sorted(name for name in os.listdir(args.checkpoint_dir) if name.startswith("checkpoint-"))
if found:
    state = torch.load(os.path.join(args.checkpoint_dir, found[-1]), weights_only=True)
    net.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start_epoch = state["epoch"] + 1

hook = smd.Hook(
    out_dir=args.out_dir,
    save_config=smd.SaveConfig(save_interval=1),
    include_collections=["weights", "losses"],
)
hook.register_module(net)
hook.register_loss(criterion)

for epoch in range(start_epoch, args.epochs):
    hook.set_mode(smd.modes.TRAIN)
    net.train()
    for batch in range(args.batches):
        generator = torch.Generator().manual_seed(epoch * 100 + batch)
        inputs, labels = torch.randn(16, 6, generator=generator), torch.randint(0, 3, (16,), generator=generator)
        optimizer.zero_grad()
        criterion(net(inputs), labels).backward()
        optimizer.step()
        if epoch * args.batches + batch == args.die_after_step:
            os._exit(137)
    hook.set_mode(smd.modes.EVAL)
    net.eval()
    with torch.no_grad():
        generator = torch.Generator().manual_seed(10_000 + epoch)
        criterion(net(torch.randn(16, 6, generator=generator)), torch.randint(0, 3, (16,), generator=generator))
    path = os.path.join(args.checkpoint_dir, f"checkpoint-{epoch:04d}.pt")
    torch.save({"epoch": epoch, "model": net.state_dict(), "optimizer": optimizer.state_dict()}, path + ".tmp")
    os.replace(path + ".tmp", path)
hook.close()

with open(os.path.join(args.checkpoint_dir, "metadata.json")) as handle:
    states = json.load(handle)
keys = ("training-run", "latest-global-step-saved", "latest-global-step-seen", "latest-mode-step")
print(json.dumps({"states": [{key: state[key] for key in keys} for state in states]}))
