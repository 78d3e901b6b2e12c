"""A small spot-training job for the state-store tests: it checkpoints every epoch into the checkpoint directory
(``TRAINING_CHECKPOINT_DIR``; the checkpoint configuration at ``CHECKPOINT_CONFIG_FILE_PATH`` names the same one for
the hook) and resumes from the newest checkpoint, as a script written for managed spot training does.

    python spot_job.py OUT_DIR PROFILE EPOCHS STEPS_PER_EPOCH DIE_AT_STEP NAN_AT_STEPS

PROFILE is how the hook is made: ``native`` or ``smdebug`` (``Hook.from_configs`` in that profile: the smdebug one
counts each epoch's evaluation as an EVAL step too), or as a script written for smdebug makes it: ``smd-code``
(``smd.Hook(out_dir=..., save_config=...)``), ``smd-json`` (``smd.Hook.create_from_json_file()``), ``smd-get-hook``
(``smd.get_hook(create_if_not_exists=True)``); those read the rules from DEBUGGER_RULE_CONFIG_FILE_PATH, written here.
After training step DIE_AT_STEP the process ends at once (``os._exit``: nothing closed or flushed, as when the spot
instance is reclaimed); -1 never. At each of NAN_AT_STEPS (comma-separated) the first layer's gradient is NaN and the
step's update is skipped: ExplodingTensor fires at the first (no StopTraining action: training goes on), and
LateExplodingTensor, the same rule from the step after it, at the next. Prints ``trained step=N epoch=E`` after each
training step.
"""

import os
import sys
from pathlib import Path

import torch
from torch import nn

from debugger import Hook
from debugger.core.modes import ModeKeys

out_dir, profile = sys.argv[1], sys.argv[2]
epochs, per_epoch, die_at = (int(value) for value in sys.argv[3:6])
nan_at = [int(value) for value in sys.argv[6].split(",")]
checkpoints = Path(os.environ["TRAINING_CHECKPOINT_DIR"])

rules = [
    {"RuleConfigurationName": "ExplodingTensor", "RuleParameters": {"rule_to_invoke": "ExplodingTensor"}},
    # the same rule watching only late steps: it can fire only after the restart
    {
        "RuleConfigurationName": "LateExplodingTensor",
        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "start_step": str(nan_at[0] + 1)},
    },
]
if profile.startswith("smd-"):
    import json

    import smdebug.pytorch as smd

    rules_file = Path(out_dir).parent / "rules.json"
    rules_file.write_text(json.dumps(rules))
    os.environ["DEBUGGER_RULE_CONFIG_FILE_PATH"] = str(rules_file)
    hook_file = Path(out_dir).parent / "debughookconfig.json"
    hook_file.write_text(json.dumps({"LocalPath": out_dir, "HookParameters": {"save_interval": "1"}}))
    os.environ["SMDEBUG_CONFIG_FILE_PATH"] = str(hook_file)
    if profile == "smd-code":
        hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1))
    elif profile == "smd-json":
        hook = smd.Hook.create_from_json_file()
    else:
        hook = smd.get_hook(create_if_not_exists=True)
else:
    hook = Hook.from_configs(
        hook_config={"HookParameters": {"save_interval": "1"}}, rule_configs=rules, out_dir=out_dir, profile=profile
    )
torch.manual_seed(0)
model, criterion = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)), nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
start_epoch = 0
found = sorted(checkpoints.glob("checkpoint-*.pt"))
if found:
    state = torch.load(found[-1], weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start_epoch = state["epoch"] + 1
    print(f"resuming from {found[-1].name} at epoch {start_epoch}", flush=True)
hook.register_module(model)
hook.register_loss(criterion)
# during backward hook.step is the step being run (its check comes at the end of backward)
model[0].weight.register_hook(lambda gradient: gradient * float("nan") if hook.step in nan_at else gradient)

for epoch in range(start_epoch, epochs):
    hook.set_mode(ModeKeys.TRAIN)
    model.train()
    for batch in range(per_epoch):
        generator = torch.Generator().manual_seed(epoch * 1000 + batch)
        inputs, labels = torch.randn(16, 6, generator=generator), torch.randint(0, 3, (16,), generator=generator)
        optimizer.zero_grad()
        criterion(model(inputs), labels).backward()
        step = hook.step - 1  # checked: hook.step is the next step's number now
        if step in nan_at:
            optimizer.zero_grad()  # the hook has checked the NaN gradient; the weights stay finite
        optimizer.step()
        print(f"trained step={step} epoch={epoch}", flush=True)
        if step == die_at:
            os._exit(137)
    hook.set_mode(ModeKeys.EVAL)
    model.eval()
    with torch.no_grad():
        criterion(model(torch.randn(16, 6)), torch.randint(0, 3, (16,)))
    checkpoints.mkdir(parents=True, exist_ok=True)
    path = checkpoints / f"checkpoint-{epoch:04d}.pt"
    torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, f"{path}.tmp")
    os.replace(f"{path}.tmp", path)
hook.close()
