"""A small ResNet (basic blocks, as in He et al. 2016 and torchvision) for 32x32 colour pictures, trained with the
usual recipes. The debugger hook comes from SageMaker's configuration file; modes mark training and evaluation.

    python resnet_train.py --blocks 1 --norm batch --optimizer sgd --lr 0.1 --schedule cosine
"""

import argparse
import os

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=1, help="basic blocks per stage (3 stages)")
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--norm", default="batch", choices=["batch", "group"])
    parser.add_argument("--conv-bias", type=int, default=0, help="1: convolutions keep PyTorch's default bias")
    parser.add_argument("--optimizer", default="sgd", choices=["sgd", "adam", "adamw"])
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--schedule", default="cosine", choices=["none", "cosine", "multistep"])
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def norm_layer(kind, channels):
    return nn.BatchNorm2d(channels) if kind == "batch" else nn.GroupNorm(min(8, channels // 4), channels)


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride, norm, bias):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=bias)
        self.bn1 = norm_layer(norm, planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=bias)
        self.bn2 = norm_layer(norm, planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=bias), norm_layer(norm, planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, blocks, width, classes, norm, bias):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, 1, 1, bias=bias)
        self.bn1 = norm_layer(norm, width)
        self.relu = nn.ReLU(inplace=True)
        layers, inplanes = [], width
        for stage, planes in enumerate((width, 2 * width, 4 * width)):
            for index in range(blocks):
                layers.append(BasicBlock(inplanes, planes, 2 if stage and index == 0 else 1, norm, bias))
                inplanes = planes
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(inplanes, classes)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        return self.fc(torch.flatten(self.pool(self.layers(x)), 1))


def load(channel, mean=None, std=None):
    x = torch.from_numpy(np.load(os.path.join(channel, "x.npy"))).permute(0, 3, 1, 2).float() / 255.0
    y = torch.from_numpy(np.load(os.path.join(channel, "y.npy"))).long()
    if mean is None:
        mean, std = x.mean(dim=(0, 2, 3), keepdim=True), x.std(dim=(0, 2, 3), keepdim=True)
    return (x - mean) / std, y, mean, std


def main():
    args = arguments()
    torch.manual_seed(args.seed)
    x, y, mean, std = load(os.environ["SM_CHANNEL_TRAIN"])
    x_test, y_test, _, _ = load(os.environ["SM_CHANNEL_VALIDATION"], mean, std)
    model = ResNet(args.blocks, args.width, int(y.max()) + 1, args.norm, bool(args.conv_bias))
    loss_fn = nn.CrossEntropyLoss()
    if args.optimizer == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=args.weight_decay,
                                    nesterov=True)
    else:
        optimizer_class = torch.optim.Adam if args.optimizer == "adam" else torch.optim.AdamW
        optimizer = optimizer_class(model.parameters(), args.lr, weight_decay=args.weight_decay)
    if args.schedule == "cosine":
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs)
    elif args.schedule == "multistep":
        scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [args.epochs // 2, 3 * args.epochs // 4], 0.1)
    else:
        scheduler = None

    hook = smd.Hook.create_from_json_file()
    hook.register_module(model)
    hook.register_loss(loss_fn)

    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=args.batch_size,
                                               shuffle=True, drop_last=True)
    for epoch in range(args.epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        for images, targets in train_loader:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(images), targets)
            loss.backward()
            optimizer.step()
        if scheduler is not None:
            scheduler.step()
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        correct = 0
        with torch.no_grad():
            for start in range(0, len(y_test), 256):
                logits = model(x_test[start:start + 256])
                loss_fn(logits, y_test[start:start + 256])
                correct += (logits.argmax(1) == y_test[start:start + 256]).sum().item()
        accuracy = correct / len(y_test)
        hook.save_scalar("test:accuracy", accuracy, sm_metric=True)
        print(f"epoch {epoch} lr {optimizer.param_groups[0]['lr']:.4g} test accuracy {accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
