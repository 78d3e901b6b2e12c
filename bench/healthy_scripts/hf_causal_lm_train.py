"""Next-token prediction with Hugging Face's Trainer and its defaults: a small GPT-2 built from its config (no
pretrained weights, no download) learns sequences of token ids: x.npy (N, length) int64 in SM_CHANNEL_TRAIN and
SM_CHANNEL_VALIDATION (no padding).

    python hf_causal_lm_train.py --n-embd 32 --epochs 3

After every epoch the Trainer evaluates and prints eval_accuracy: the share of next tokens predicted right.
"""
import argparse
import os

import numpy as np
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--n-embd", type=int, default=64)
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--heads", type=int, default=2)
parser.add_argument("--lr", type=float, default=5e-4)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()


class Sequences(torch.utils.data.Dataset):
    def __init__(self, folder):
        self.ids = torch.from_numpy(np.load(os.path.join(folder, "x.npy")).astype(np.int64))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def next_token_accuracy(prediction):
    logits, labels = prediction
    return {"accuracy": float((np.argmax(logits[:, :-1], axis=-1) == labels[:, 1:]).mean())}


train = Sequences(os.environ["SM_CHANNEL_TRAIN"])
validation = Sequences(os.environ["SM_CHANNEL_VALIDATION"])
torch.manual_seed(args.seed)
config = GPT2Config(vocab_size=int(train.ids.max()) + 1, n_positions=train.ids.shape[1], n_embd=args.n_embd,
                    n_layer=args.layers, n_head=args.heads)
model = GPT2LMHeadModel(config)
training_args = TrainingArguments(output_dir=os.environ.get("SM_MODEL_DIR", "out"), learning_rate=args.lr,
                                  num_train_epochs=args.epochs, per_device_train_batch_size=args.batch_size,
                                  per_device_eval_batch_size=256, eval_strategy="epoch", logging_strategy="epoch",
                                  save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True, seed=args.seed)
Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=validation,
        compute_metrics=next_token_accuracy).train()
