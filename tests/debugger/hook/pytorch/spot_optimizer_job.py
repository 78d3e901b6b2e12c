"""A spot-training job for the optimizer-step tests: 3 epochs of 4 optimizer steps, an evaluation pass and then a
checkpoint after each epoch (into ``TRAINING_CHECKPOINT_DIR``, which the checkpoint configuration at
``CHECKPOINT_CONFIG_FILE_PATH`` names for the hook), resuming from the newest checkpoint, as a script written for
managed spot training does.

    python spot_optimizer_job.py OUT_DIR HOW OPTIMIZER DIE_AFTER_STEP BLOW_AT_STEP

HOW is how the hook is made: ``native`` (``Hook.from_configs``), ``smd-code`` (``smd.Hook(out_dir=...,
save_config=...)``), ``smd-json`` (``smd.Hook.create_from_json_file()``), ``smd-get-hook``
(``smd.get_hook(create_if_not_exists=True)``) or ``zero-change`` (the script makes none: the zero-change hook the
launcher installs). OPTIMIZER: ``lbfgs`` (``optimizer.step(closure)``, exactly 3 closure evaluations a step: no
tolerance ends a step early) or ``sgd``. After optimizer step DIE_AFTER_STEP the process ends at once (``os._exit``,
as when the instance is reclaimed; -1 never). Optimizer step BLOW_AT_STEP's loss is infinite: ExplodingTensor stops
the job (StopTraining).
"""

import json
import math
import os
import sys
from pathlib import Path

import torch
from torch import nn

out_dir, how, optimizer_name = sys.argv[1], sys.argv[2], sys.argv[3]
die_after, blow_at = int(sys.argv[4]), int(sys.argv[5])
checkpoints = Path(os.environ["TRAINING_CHECKPOINT_DIR"])
EPOCHS, PER_EPOCH = 3, 4
STOP = json.dumps([{"name": "StopTraining"}])
rules = [
    {
        "RuleConfigurationName": "ExplodingTensor",
        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": STOP},
    }
]
hook_config = {"HookParameters": {"save_interval": "1"}}

watcher = None
if how.startswith("smd-"):
    import smdebug.pytorch as smd

    rules_file = Path(out_dir).parent / "rules.json"
    rules_file.write_text(json.dumps(rules))
    os.environ["DEBUGGER_RULE_CONFIG_FILE_PATH"] = str(rules_file)
    hook_file = Path(out_dir).parent / "debughookconfig.json"
    hook_file.write_text(json.dumps({"LocalPath": out_dir, **hook_config}))
    os.environ["SMDEBUG_CONFIG_FILE_PATH"] = str(hook_file)
    if how == "smd-code":
        hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1))
    elif how == "smd-json":
        hook = smd.Hook.create_from_json_file()
    else:
        hook = smd.get_hook(create_if_not_exists=True)
elif how == "native":
    from debugger import Hook

    hook = Hook.from_configs(hook_config=hook_config, rule_configs=rules, out_dir=out_dir)
else:
    from debugger.hook.zero_change.pytorch import AutomaticHook, TorchWatcher

    hook = None
    watcher = TorchWatcher(lambda: AutomaticHook.from_configs(hook_config, rules, out_dir=out_dir))
    watcher.install()

torch.manual_seed(0)
model, criterion = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)), nn.CrossEntropyLoss()
if optimizer_name == "lbfgs":
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=3, tolerance_grad=-1, tolerance_change=-1)
else:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
start_epoch = 0
found = sorted(checkpoints.glob("checkpoint-*.pt"))
if found:
    state = torch.load(found[-1], weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start_epoch = state["epoch"] + 1
    print(f"resuming from {found[-1].name} at epoch {start_epoch}", flush=True)
if hook is not None:
    hook.register_module(model)
    hook.register_loss(criterion)

for epoch in range(start_epoch, EPOCHS):
    model.train()
    for batch in range(PER_EPOCH):
        step = epoch * PER_EPOCH + batch
        generator = torch.Generator().manual_seed(step)
        inputs = torch.randn(16, 6, generator=generator)
        labels = torch.randint(0, 3, (16,), generator=generator)
        scale = math.inf if step == blow_at else 1.0

        def closure(inputs=inputs, labels=labels, scale=scale):
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels) * scale
            loss.backward()
            return loss

        if optimizer_name == "lbfgs":
            optimizer.step(closure)
        else:
            closure()
            optimizer.step()
        print(f"trained step={step}", flush=True)
        if step == die_after:
            os._exit(137)
    model.eval()
    with torch.no_grad():
        generator = torch.Generator().manual_seed(1000 + epoch)
        criterion(model(torch.randn(16, 6, generator=generator)), torch.randint(0, 3, (16,), generator=generator))
    checkpoints.mkdir(parents=True, exist_ok=True)
    path = checkpoints / f"checkpoint-{epoch:04d}.pt"
    torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, f"{path}.tmp")
    os.replace(f"{path}.tmp", path)
if watcher is not None:
    watcher.uninstall()
    hook = watcher.hook
hook.close()
