"""Text classification with Hugging Face's Trainer: a small BERT encoder built from its config (no pretrained
weights), on token ids already encoded: x.npy (N, length) int, 0 = padding, and y.npy (N,) in SM_CHANNEL_TRAIN and
SM_CHANNEL_VALIDATION.

    python hf_text_classifier.py --learning_rate 5e-4 --num_train_epochs 4 --hidden_size 64

The Trainer evaluates after every epoch and logs ``eval_accuracy``.
"""
import argparse
import os

import numpy as np
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, default=5e-4)
parser.add_argument("--num_train_epochs", type=int, default=4)
parser.add_argument("--per_device_train_batch_size", type=int, default=32)
parser.add_argument("--weight_decay", type=float, default=0.0)
parser.add_argument("--max_grad_norm", type=float, default=1.0)
parser.add_argument("--hidden_size", type=int, default=64)
parser.add_argument("--num_hidden_layers", type=int, default=2)
parser.add_argument("--num_attention_heads", type=int, default=2)
parser.add_argument("--seed", type=int, default=42)
parser.add_argument("--output_dir", default=os.environ.get("SM_MODEL_DIR", "out"))
args = parser.parse_args()


class EncodedText(torch.utils.data.Dataset):
    def __init__(self, channel):
        folder = os.environ[f"SM_CHANNEL_{channel.upper()}"]
        self.ids = torch.from_numpy(np.load(os.path.join(folder, "x.npy")).astype(np.int64))
        self.labels = torch.from_numpy(np.load(os.path.join(folder, "y.npy")).astype(np.int64))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        ids = self.ids[i]
        return {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": self.labels[i]}


def compute_metrics(prediction):
    logits, labels = prediction
    return {"accuracy": float((np.argmax(logits, axis=-1) == labels).mean())}


train, validation = EncodedText("train"), EncodedText("validation")
config = BertConfig(vocab_size=int(max(train.ids.max(), validation.ids.max())) + 1, hidden_size=args.hidden_size,
                    num_hidden_layers=args.num_hidden_layers, num_attention_heads=args.num_attention_heads,
                    intermediate_size=2 * args.hidden_size, max_position_embeddings=train.ids.shape[1],
                    num_labels=int(train.labels.max()) + 1)
torch.manual_seed(args.seed)
model = BertForSequenceClassification(config)

training_args = TrainingArguments(
    output_dir=args.output_dir,
    learning_rate=args.learning_rate,
    num_train_epochs=args.num_train_epochs,
    per_device_train_batch_size=args.per_device_train_batch_size,
    per_device_eval_batch_size=256,
    weight_decay=args.weight_decay,
    max_grad_norm=args.max_grad_norm,
    eval_strategy="epoch",
    logging_strategy="epoch",
    save_strategy="no",
    report_to="none",
    disable_tqdm=True,
    use_cpu=True,
    seed=args.seed,
)
trainer = Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=validation,
                  compute_metrics=compute_metrics)
trainer.train()
