"""Transfer learning: a convolutional feature extractor trained on one task (digits 0-4) is reused, frozen, for
another (digits 5-9); only a new classifier head is trained, optionally with the last block fine-tuned at a lower
rate. The debugger watches the fine-tuning model (smdebug's hook from SageMaker's configuration file).

In a real project the backbone's weights would come from a checkpoint; here it is trained first, in the same
script, without the debugger.
"""

import argparse
import os

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--unfreeze-last", type=int, default=0, help="1: fine-tune the last block at lr / 10")
    parser.add_argument("--backbone-eval", type=int, default=1, help="1: keep the frozen backbone's batch norm in eval mode")
    parser.add_argument("--optimizer", default="adam", choices=["adam", "sgd"])
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--pretrain-epochs", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def features():
    return nn.Sequential(
        nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2)),
        nn.Flatten(),
    )


class Classifier(nn.Module):
    def __init__(self, backbone, classes):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Sequential(nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, x):
        return self.head(self.backbone(x))


def subset(directory, classes):
    x = np.load(os.path.join(directory, "x.npy")).astype(np.float32) / 16.0
    y = np.load(os.path.join(directory, "y.npy")).astype(np.int64)
    keep = np.isin(y, classes)
    return torch.from_numpy(x[keep]), torch.from_numpy(y[keep] - min(classes))


def pretrain(backbone, x, y, epochs, seed):
    model = Classifier(backbone, 5)
    optimizer = torch.optim.Adam(model.parameters(), 1e-3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32, shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()


def main():
    args = parse()
    torch.manual_seed(args.seed)
    train, validation = os.environ["SM_CHANNEL_TRAIN"], os.environ["SM_CHANNEL_VALIDATION"]
    backbone = features()
    pretrain(backbone, *subset(train, [0, 1, 2, 3, 4]), args.pretrain_epochs, args.seed)

    x, y = subset(train, [5, 6, 7, 8, 9])
    x_val, y_val = subset(validation, [5, 6, 7, 8, 9])
    model = Classifier(backbone, 5)
    for parameter in model.backbone.parameters():
        parameter.requires_grad = False
    groups = [{"params": model.head.parameters()}]
    if args.unfreeze_last:
        for parameter in model.backbone[1].parameters():
            parameter.requires_grad = True
        groups.append({"params": model.backbone[1].parameters(), "lr": args.lr / 10})
    if args.optimizer == "adam":
        optimizer = torch.optim.Adam(groups, lr=args.lr)
    else:
        optimizer = torch.optim.SGD(groups, lr=args.lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    hook = smd.Hook.create_from_json_file()
    hook.register_module(model)
    hook.register_loss(criterion)

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=args.batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(args.seed + 1))
    for epoch in range(args.epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        if args.backbone_eval:
            model.backbone.eval()
            if args.unfreeze_last:
                model.backbone[1].train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        with torch.no_grad():
            logits = model(x_val)
            criterion(logits, y_val)
            accuracy = (logits.argmax(1) == y_val).float().mean().item()
        hook.save_scalar("validation:accuracy", accuracy, sm_metric=True)
        print(f"epoch={epoch} val_accuracy={accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
