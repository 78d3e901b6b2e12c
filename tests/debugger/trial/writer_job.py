"""A small training job for the trial-reader tests: saves every step, optionally slowly or with big tensors.

    python writer_job.py OUT_DIR STEPS SECONDS_PER_STEP WIDTH
Prints "step N" after each step so the test can follow it.
"""

import sys
import time

import torch
from torch import nn

from debugger import Hook

out_dir, steps, pause, width = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, out_dir=out_dir, job_name="writer")
torch.manual_seed(0)
model, criterion = nn.Sequential(nn.Linear(width, width), nn.Linear(width, 2)), nn.CrossEntropyLoss()
hook.register_module(model)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
hook.register_optimizer(optimizer)
for step in range(steps):
    optimizer.zero_grad()
    criterion(model(torch.randn(4, width)), torch.randint(0, 2, (4,))).backward()
    optimizer.step()
    print(f"step {step}", flush=True)
    time.sleep(pause)
hook.close()
