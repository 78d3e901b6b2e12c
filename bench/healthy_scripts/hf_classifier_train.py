"""Sequence classification with Hugging Face's Trainer and its defaults (AdamW, linear decay, gradient clipping at
1.0): a small BERT encoder built from its config, no pretrained weights, no download. Token ids already encoded:
x.npy (N, length) int64 with 0 as padding, y.npy (N,) in SM_CHANNEL_TRAIN and SM_CHANNEL_VALIDATION.

    python hf_classifier_train.py --hidden-size 32 --epochs 4

The Trainer evaluates after every epoch and prints its logs, eval_accuracy among them.
"""
import argparse
import os

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--hidden-size", type=int, default=64)
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--heads", type=int, default=2)
parser.add_argument("--lr", type=float, default=5e-4)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=4)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()


class Encoded(torch.utils.data.Dataset):
    def __init__(self, folder):
        self.ids = torch.from_numpy(np.load(os.path.join(folder, "x.npy")).astype(np.int64))
        self.labels = torch.from_numpy(np.load(os.path.join(folder, "y.npy")).astype(np.int64))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": (self.ids[i] != 0).long(), "labels": self.labels[i]}


def accuracy(prediction):
    logits, labels = prediction
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


train = Encoded(os.environ["SM_CHANNEL_TRAIN"])
validation = Encoded(os.environ["SM_CHANNEL_VALIDATION"])
torch.manual_seed(args.seed)
config = BertConfig(vocab_size=int(train.ids.max()) + 1, hidden_size=args.hidden_size, num_hidden_layers=args.layers,
                    num_attention_heads=args.heads, intermediate_size=4 * args.hidden_size,
                    max_position_embeddings=train.ids.shape[1], num_labels=int(train.labels.max()) + 1)
model = BertForSequenceClassification(config)
training_args = TrainingArguments(output_dir=os.environ.get("SM_MODEL_DIR", "out"), learning_rate=args.lr,
                                  num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
                                  per_device_eval_batch_size=256, eval_strategy="epoch", logging_strategy="epoch",
                                  save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True, seed=args.seed)
Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=validation, compute_metrics=accuracy).train()
