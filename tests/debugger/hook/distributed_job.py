"""One rank of a small job under torch.distributed (gloo), for tests/debugger/hook/test_hook_distributed.py.

    RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p python distributed_job.py OUT_DIR STEPS POISON_RANK POISON_STEP

Each rank trains its own copy of a small model on its own data (no gradient averaging: what one rank's gradients
show, only that rank's rules see). At POISON_STEP the rank POISON_RANK multiplies its loss by infinity, so its
gradients are non-finite. Prints one JSON line: the rank, the step it stopped at (or null) and the stop's text.
"""

import json
import sys

import torch
import torch.distributed as dist
from torch import nn

from debugger import Hook, StopTrainingRequested

out_dir, steps, poison_rank, poison_step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
dist.init_process_group("gloo")
rank = dist.get_rank()
stop_action = json.dumps([{"name": "StopTraining", "training_job_prefix": "distributed-job"}])
hook = Hook.from_configs(
    hook_config={"HookParameters": {"save_interval": "2", "include_workers": "all"}},
    rule_configs=[
        {
            "RuleConfigurationName": "ExplodingTensor",
            "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": stop_action},
        }
    ],
    out_dir=out_dir,
    job_name="distributed-job",
)
torch.manual_seed(rank)  # each rank its own weights and data: their saved tensors differ
model, criterion = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)), nn.CrossEntropyLoss()
hook.register_module(model)
hook.register_loss(criterion)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
stopped_at, text = None, None
try:
    for step in range(steps):
        optimizer.zero_grad()
        loss = criterion(model(torch.randn(4, 8)), torch.randint(0, 2, (4,)))
        if rank == poison_rank and step == poison_step:
            loss = loss * float("inf")
        loss.backward()
        optimizer.step()
except StopTrainingRequested as stop:
    stopped_at, text = stop.step, str(stop)
hook.close(training_ended=stopped_at is None)
print(json.dumps({"rank": rank, "stopped_at": stopped_at, "stop": text}), flush=True)
dist.destroy_process_group()
