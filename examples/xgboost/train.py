"""A gradient-boosted trees classifier written for SageMaker's XGBoost container in script mode and for
SageMaker Debugger's XGBoost hook (``from smdebug.xgboost import Hook``), unchanged.

SageMaker runs it as ``python train.py --max_depth 5 --eta 0.2 ...`` (the hyperparameters also in ``SM_HPS``);
the data comes from the ``train`` and ``validation`` channels (``SM_CHANNEL_TRAIN``, ``SM_CHANNEL_VALIDATION``),
each a directory of CSV files with the label in the first column and no header, the XGBoost container's
``text/csv`` layout. The model goes to ``SM_MODEL_DIR/xgboost-model``.

Every ``checkpoint_frequency`` rounds it saves ``xgboost-checkpoint.<round>`` into the checkpoint directory
(SageMaker's /opt/ml/checkpoints, ``TRAINING_CHECKPOINT_DIR`` when run elsewhere), as the XGBoost container does,
and a new job resumes from the newest one it finds there, boosting the remaining rounds with its own
hyperparameters. ``early_stopping_rounds`` stops when the validation metric has not improved for that many rounds
and keeps the best round's model. At the end it prints the line the run_spec's metric regex reads::

    validation-accuracy=0.9649 best_round=41 rounds=47
"""

import argparse
import glob
import json
import os
import re

import numpy as np
import xgboost as xgb

from smdebug.xgboost import Hook

CHECKPOINT = re.compile(r"^xgboost-checkpoint\.(\d+)$")
CHECKPOINTS_KEPT = 3


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num_round", type=int, default=100)
    parser.add_argument("--max_depth", type=int, default=6)
    parser.add_argument("--eta", type=float, default=0.3)
    parser.add_argument("--min_child_weight", type=float, default=1.0)
    parser.add_argument("--subsample", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.0)
    parser.add_argument("--lambda", dest="reg_lambda", type=float, default=1.0)
    parser.add_argument("--scale_pos_weight", type=float, default=1.0)
    parser.add_argument("--objective", default="binary:logistic")
    parser.add_argument("--num_class", type=int, default=0)
    parser.add_argument("--eval_metric", default="", help="comma-separated; default: logloss (mlogloss for multi:)")
    parser.add_argument("--early_stopping_rounds", type=int, default=0, help="0: off")
    parser.add_argument("--checkpoint_frequency", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nthread", type=int, default=int(os.environ.get("SM_NUM_CPUS", "1")))
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "data/train"))
    parser.add_argument("--validation", default=os.environ.get("SM_CHANNEL_VALIDATION", "data/validation"))
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    parser.add_argument("--checkpoint-dir", default=os.environ.get("TRAINING_CHECKPOINT_DIR", "/opt/ml/checkpoints"))
    return parser.parse_args()


def load_csv(directory):
    """A channel: every CSV file in the directory, label first (the XGBoost container's text/csv)."""
    files = sorted(glob.glob(os.path.join(directory, "*.csv")))
    if not files:
        raise SystemExit(f"no .csv file in the channel directory {directory}")
    rows = np.concatenate([np.loadtxt(path, delimiter=",", ndmin=2) for path in files])
    return xgb.DMatrix(rows[:, 1:], label=rows[:, 0])


def booster_params(args, classes):
    multiclass = args.objective.startswith("multi:")
    metrics = [m for m in args.eval_metric.split(",") if m] or (["mlogloss"] if multiclass else ["logloss"])
    params = {
        "objective": args.objective, "max_depth": args.max_depth, "eta": args.eta,
        "min_child_weight": args.min_child_weight, "subsample": args.subsample, "gamma": args.gamma,
        "lambda": args.reg_lambda, "scale_pos_weight": args.scale_pos_weight, "eval_metric": metrics,
        "seed": args.seed, "nthread": args.nthread,
    }  # fmt: skip
    if multiclass:
        params["num_class"] = args.num_class or classes
    return params


def newest_checkpoint(directory):
    found = [(int(m.group(1)), os.path.join(directory, name)) for name in os.listdir(directory) if (m := CHECKPOINT.match(name))]
    return max(found) if found else (None, None)


class Checkpoints(xgb.callback.TrainingCallback):
    """xgboost-checkpoint.<round> every ``frequency`` rounds (the newest few kept), as the XGBoost container saves."""

    def __init__(self, directory, frequency):
        super().__init__()
        self.directory, self.frequency = directory, frequency

    def after_iteration(self, model, epoch, evals_log):
        rounds = model.num_boosted_rounds()
        if self.frequency > 0 and rounds % self.frequency == 0:
            path = os.path.join(self.directory, f"xgboost-checkpoint.{rounds}")
            model.save_model(path + ".json")
            os.replace(path + ".json", path)  # whole or absent, even if the job is stopped mid-write
            for old in sorted(newest for newest in os.listdir(self.directory) if CHECKPOINT.match(newest))[:-CHECKPOINTS_KEPT]:
                if int(CHECKPOINT.match(old).group(1)) < rounds - CHECKPOINTS_KEPT * self.frequency:
                    os.remove(os.path.join(self.directory, old))
        return False


def accuracy(model, data, best_round):
    predictions = model.predict(data, iteration_range=(0, best_round + 1))
    guessed = predictions.argmax(axis=1) if predictions.ndim > 1 else (predictions > 0.5)
    return float((guessed == data.get_label()).mean())


def main():
    args = parse_args()
    dtrain, dvalidation = load_csv(args.train), load_csv(args.validation)
    classes = int(max(dtrain.get_label().max(), dvalidation.get_label().max())) + 1
    params = booster_params(args, classes)
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    done, checkpoint = newest_checkpoint(args.checkpoint_dir)
    if checkpoint:
        print(f"resuming from {checkpoint} ({done} rounds done)", flush=True)

    # SageMaker Debugger's script-mode pattern for XGBoost: the hook from the configuration file SageMaker writes.
    hook = Hook.create_from_json_file()
    hook.train_data = dtrain
    hook.validation_data = dvalidation
    hook.hyperparameters = params

    callbacks = [hook, Checkpoints(args.checkpoint_dir, args.checkpoint_frequency)]
    if args.early_stopping_rounds > 0:
        callbacks.append(xgb.callback.EarlyStopping(rounds=args.early_stopping_rounds, save_best=True))
    model = xgb.train(
        params,
        dtrain,
        num_boost_round=max(args.num_round - (done or 0), 0),
        evals=[(dtrain, "train"), (dvalidation, "validation")],
        callbacks=callbacks,
        xgb_model=checkpoint,
        verbose_eval=False,
    )
    rounds = model.num_boosted_rounds()
    best_round = rounds - 1  # save_best already cut the model at its best round
    validation_accuracy = accuracy(model, dvalidation, best_round)
    hook.save_scalar("validation:accuracy", validation_accuracy)
    print(f"validation-accuracy={validation_accuracy:.4f} best_round={best_round} rounds={rounds}", flush=True)

    os.makedirs(args.model_dir, exist_ok=True)
    model.save_model(os.path.join(args.model_dir, "xgboost-model"))
    with open(os.path.join(args.model_dir, "metrics.json"), "w") as handle:
        json.dump({"validation_accuracy": validation_accuracy, "rounds": rounds}, handle)


if __name__ == "__main__":
    main()
