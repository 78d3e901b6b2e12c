"""Tabular regression with PyTorch Lightning: a LightningModule MLP on x.npy (N, features) and y.npy (N,) from
SM_CHANNEL_TRAIN and SM_CHANNEL_VALIDATION. Features standardised with the training set's statistics.

    python lightning_regressor.py --lr 3e-3 --max-epochs 20 --loss huber --gradient-clip-val 1.0

Logs val_rmse and val_mae after each validation epoch, and prints them: ``epoch=3 val_rmse=0.51 val_mae=0.40``.
"""
import argparse
import os

import numpy as np
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=3e-3)
parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
parser.add_argument("--loss", choices=["mse", "huber"], default="mse")
parser.add_argument("--max-epochs", type=int, default=20)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--hidden-dim", type=int, default=64)
parser.add_argument("--n-layers", type=int, default=2)
parser.add_argument("--gradient-clip-val", type=float, default=0.0)
parser.add_argument("--seed", type=int, default=7)
args = parser.parse_args()


def read(channel):
    folder = os.environ["SM_CHANNEL_" + channel.upper()]
    x = np.load(os.path.join(folder, "x.npy")).astype(np.float32)
    return torch.from_numpy(x.reshape(len(x), -1)), torch.from_numpy(np.load(os.path.join(folder, "y.npy")).astype(np.float32))


class Regressor(pl.LightningModule):
    def __init__(self, n_features):
        super().__init__()
        self.save_hyperparameters(vars(args))
        layers, width = [], n_features
        for _ in range(args.n_layers):
            layers += [nn.Linear(width, args.hidden_dim), nn.ReLU()]
            width = args.hidden_dim
        self.net = nn.Sequential(*layers, nn.Linear(width, 1))
        self.criterion = nn.MSELoss() if args.loss == "mse" else nn.SmoothL1Loss()
        self.errors = []

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.criterion(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.errors.append(self(x) - y)

    def on_validation_epoch_end(self):
        error = torch.cat(self.errors)
        self.errors.clear()
        rmse, mae = error.pow(2).mean().sqrt(), error.abs().mean()
        self.log_dict({"val_rmse": rmse, "val_mae": mae})
        if not self.trainer.sanity_checking:
            print(f"epoch={self.current_epoch} val_rmse={rmse:.4f} val_mae={mae:.4f}", flush=True)

    def configure_optimizers(self):
        if args.optimizer == "sgd":
            return torch.optim.SGD(self.parameters(), lr=args.lr, momentum=0.9)
        return torch.optim.Adam(self.parameters(), lr=args.lr)


pl.seed_everything(args.seed)
x_train, y_train = read("train")
x_val, y_val = read("validation")
mean, std = x_train.mean(0), x_train.std(0) + 1e-6
x_train, x_val = (x_train - mean) / std, (x_val - mean) / std
train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True)
val_loader = DataLoader(TensorDataset(x_val, y_val), batch_size=512)

trainer = pl.Trainer(max_epochs=args.max_epochs, accelerator="cpu", devices=1, logger=False,
                     enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                     gradient_clip_val=args.gradient_clip_val or None)
trainer.fit(Regressor(x_train.shape[1]), train_loader, val_loader)
