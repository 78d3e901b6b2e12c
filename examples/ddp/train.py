"""A user's own data-parallel training script for several instances, written for SageMaker Debugger (smdebug):
DistributedDataParallel over torch.distributed's gloo backend on CPU (NCCL on GPUs), a DistributedSampler giving
each rank its shard, and the smdebug hook on every rank.

SageMaker runs it on every host of a job with ``instance_count`` > 1, either once per host (no ``distribution``:
the script forms the process group from SM_HOSTS / SM_CURRENT_HOST, the first host as master) or under torchrun
(``"distribution": {"torch_distributed": {"enabled": true}}``: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT are set).
One process alone trains without a process group.

It trains an MLP on generated data (Gaussian classes, the same on every rank, so nothing is downloaded) and prints,
on rank 0, a line per epoch the run_spec's metric regex reads::

    epoch=3 train_loss=0.1234 val_accuracy=0.9375

``--bad-shard-rank R`` makes rank R's shard arrive unstandardised (its features times ``--bad-shard-scale``), as
when one host reads data prepared differently: its gradients are the first to explode at a high learning rate,
while the other ranks' stay finite. ``--normalize-inputs 1`` scales every sample to unit root mean square before the
model sees it, which makes the model blind to a shard's scale (the remedy the run_spec declares first).

For managed spot training rank 0 checkpoints every epoch into the checkpoint directory (SageMaker's
/opt/ml/checkpoints; ``TRAINING_CHECKPOINT_DIR`` when run elsewhere; none without either), and every rank resumes
from the newest checkpoint there when the job restarts.
"""

import argparse
import json
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

import smdebug.pytorch as smd

#: The training toolkit's torchrun master port, used when the script forms the group itself from SM_HOSTS.
DEFAULT_MASTER_PORT = "7777"
#: How far apart the classes lie (in noise standard deviations per feature): close enough that the loss stays above 0.
SEPARATION = 1.0


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bad-shard-rank", type=int, default=-1)
    parser.add_argument("--bad-shard-scale", type=float, default=1e4)
    parser.add_argument("--normalize-inputs", type=int, choices=(0, 1), default=0)
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    parser.add_argument(
        "--checkpoint-dir",
        default=os.environ.get("TRAINING_CHECKPOINT_DIR", "/opt/ml/checkpoints" if os.path.isdir("/opt/ml") else ""),
    )
    return parser.parse_args()


def newest_checkpoint(directory):
    if not directory or not os.path.isdir(directory):
        return None
    names = sorted(name for name in os.listdir(directory) if name.startswith("checkpoint-") and name.endswith(".pt"))
    return os.path.join(directory, names[-1]) if names else None


def init_distributed(backend):
    """(rank, world size) after joining the job's process group; (0, 1) for a job of one process."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun / torch.distributed.launch
        rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    else:
        hosts = json.loads(os.environ.get("SM_HOSTS", "[]"))
        if len(hosts) < 2:
            return 0, 1
        rank, world_size = hosts.index(os.environ["SM_CURRENT_HOST"]), len(hosts)
        os.environ.setdefault("MASTER_ADDR", hosts[0])
        os.environ.setdefault("MASTER_PORT", DEFAULT_MASTER_PORT)
    if world_size > 1:
        dist.init_process_group(backend, rank=rank, world_size=world_size)
    return rank, world_size


def make_data(samples, seed, features=16, classes=4):
    generator = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=generator) * SEPARATION
    y = torch.randint(0, classes, (samples,), generator=generator)
    x = centers[y] + torch.randn(samples, features, generator=generator)
    return x, y


def normalized(features, normalize):
    """Each sample at unit root mean square when asked: the same model output whatever a shard's scale."""
    if not normalize:
        return features
    return features / features.pow(2).mean(dim=1, keepdim=True).sqrt().clamp_min(1e-12)


def main():
    args = parse_args()
    device = torch.device("cuda" if int(os.environ.get("SM_NUM_GPUS") or 0) > 0 and torch.cuda.is_available() else "cpu")
    rank, world_size = init_distributed("nccl" if device.type == "cuda" else "gloo")
    print(f"rank {rank} of {world_size} on {os.environ.get('SM_CURRENT_HOST', 'this machine')} ({device})", flush=True)
    torch.manual_seed(args.seed)
    x, y = make_data(args.samples, args.seed)
    cut = int(len(y) * 0.8)
    train = TensorDataset(x[:cut], y[:cut])
    x_val, y_val = x[cut:].to(device), y[cut:].to(device)
    sampler = DistributedSampler(train, num_replicas=world_size, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    scale = args.bad_shard_scale if rank == args.bad_shard_rank else 1.0

    model = nn.Sequential(
        nn.Linear(x.shape[1], args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, int(y.max()) + 1),
    ).to(device)  # fmt: skip
    trained = DistributedDataParallel(model) if world_size > 1 else model
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(trained.parameters(), lr=args.lr, momentum=0.9)

    start_epoch = 0
    checkpoint = newest_checkpoint(args.checkpoint_dir)
    if checkpoint:  # every rank loads the same file, so the replicas start equal
        state = torch.load(checkpoint, map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1
        print(f"resuming from {checkpoint}: continuing at epoch {start_epoch}", flush=True)

    # SageMaker Debugger's script-mode pattern, on every rank: each records and checks its own tensors.
    hook = smd.Hook.create_from_json_file()
    hook.register_module(model)
    hook.register_loss(loss_fn)

    for epoch in range(start_epoch, args.epochs):
        hook.set_mode(smd.modes.TRAIN)
        trained.train()
        sampler.set_epoch(epoch)
        total, count = 0.0, 0
        for features, labels in loader:
            features, labels = normalized(features.to(device) * scale, args.normalize_inputs), labels.to(device)
            optimizer.zero_grad()
            loss = loss_fn(trained(features), labels)
            loss.backward()
            optimizer.step()
            total, count = total + loss.item() * len(labels), count + len(labels)

        # Every rank evaluates (the same forwards on each, so their step numbers stay aligned); rank 0 reports.
        hook.set_mode(smd.modes.EVAL)
        trained.eval()
        with torch.no_grad():
            predicted = model(normalized(x_val, args.normalize_inputs)).argmax(dim=1)
            accuracy = (predicted == y_val).float().mean().item()
        if rank == 0:
            hook.save_scalar("validation:accuracy", accuracy, sm_metric=True)
            print(f"epoch={epoch} train_loss={total / max(count, 1):.4f} val_accuracy={accuracy:.4f}", flush=True)
            if args.checkpoint_dir:
                os.makedirs(args.checkpoint_dir, exist_ok=True)
                path = os.path.join(args.checkpoint_dir, f"checkpoint-{epoch:04d}.pt")
                torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, path + ".tmp")
                os.replace(path + ".tmp", path)

    if rank == 0:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save({name: tensor.cpu() for name, tensor in model.state_dict().items()}, os.path.join(args.model_dir, "model.pt"))
    if world_size > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
