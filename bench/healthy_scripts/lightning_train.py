"""Image classification with PyTorch Lightning (automatic optimization, Lightning's own loop): a small CNN as a
LightningModule on x.npy (N, channels, height, width) float and y.npy (N,) int from SM_CHANNEL_TRAIN and
SM_CHANNEL_VALIDATION, pixels scaled by the training set's maximum.

    python lightning_train.py --lr 1e-3 --epochs 8

Prints ``epoch=3 val_accuracy=0.9420`` after each validation epoch.
"""
import argparse
import os

import numpy as np
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
parser.add_argument("--channels", type=int, default=16)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--epochs", type=int, default=8)
parser.add_argument("--accumulate", type=int, default=1)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()


def read(channel):
    folder = os.environ["SM_CHANNEL_" + channel.upper()]
    return (torch.from_numpy(np.load(os.path.join(folder, "x.npy")).astype(np.float32)),
            torch.from_numpy(np.load(os.path.join(folder, "y.npy")).astype(np.int64)))


class Classifier(pl.LightningModule):
    def __init__(self, in_channels, classes):
        super().__init__()
        c = args.channels
        self.features = nn.Sequential(nn.Conv2d(in_channels, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
                                      nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.head = nn.Linear(8 * c, classes)
        self.correct = []

    def forward(self, x):
        return self.head(self.features(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.correct.append(self(x).argmax(1) == y)

    def on_validation_epoch_end(self):
        accuracy = torch.cat(self.correct).float().mean()
        self.correct.clear()
        self.log("val_accuracy", accuracy)
        if not self.trainer.sanity_checking:
            print(f"epoch={self.current_epoch} val_accuracy={accuracy:.4f}", flush=True)

    def configure_optimizers(self):
        if args.optimizer == "sgd":
            return torch.optim.SGD(self.parameters(), lr=args.lr, momentum=0.9)
        return torch.optim.Adam(self.parameters(), lr=args.lr)


pl.seed_everything(args.seed)
x_train, y_train = read("train")
x_val, y_val = read("validation")
scale = x_train.max()
train_loader = DataLoader(TensorDataset(x_train / scale, y_train), batch_size=args.batch_size, shuffle=True)
val_loader = DataLoader(TensorDataset(x_val / scale, y_val), batch_size=512)
trainer = pl.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False, accumulate_grad_batches=args.accumulate)
trainer.fit(Classifier(x_train.shape[1], int(y_train.max()) + 1), train_loader, val_loader)
