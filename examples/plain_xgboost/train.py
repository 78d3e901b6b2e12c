"""A plain XGBoost training script: no debugger import, no hook, nothing written for the workflow.

Gradient-boosted trees on the ``train`` and ``validation`` channels (CSV files, the label in the first column, no
header: SageMaker's XGBoost ``text/csv`` layout; `examples/xgboost/make_data.py` makes them), ``xgboost.train`` with
the hyperparameters SageMaker's script mode passes (``python train.py --max_depth 5 --eta 0.2 ...``). The job's
debugger watches it all the same (zero script change: its hook is added to the ``xgboost.train`` call's callbacks),
and the run_spec's metric regex reads its last line::

    validation-accuracy=0.9649 rounds=47
"""

import argparse
import glob
import os

import numpy as np
import xgboost as xgb


def load_csv(directory):
    rows = np.concatenate([np.loadtxt(path, delimiter=",", ndmin=2) for path in sorted(glob.glob(f"{directory}/*.csv"))])
    return xgb.DMatrix(rows[:, 1:], label=rows[:, 0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num_round", type=int, default=100)
    parser.add_argument("--max_depth", type=int, default=6)
    parser.add_argument("--eta", type=float, default=0.3)
    parser.add_argument("--min_child_weight", type=float, default=1.0)
    parser.add_argument("--lambda", dest="reg_lambda", type=float, default=1.0)
    parser.add_argument("--early_stopping_rounds", type=int, default=0, help="0: off")
    parser.add_argument("--nthread", type=int, default=1)
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN", "data/train"))
    parser.add_argument("--validation", default=os.environ.get("SM_CHANNEL_VALIDATION", "data/validation"))
    parser.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    args = parser.parse_args()

    dtrain, dvalidation = load_csv(args.train), load_csv(args.validation)
    params = {
        "objective": "binary:logistic", "eval_metric": "logloss", "max_depth": args.max_depth, "eta": args.eta,
        "min_child_weight": args.min_child_weight, "lambda": args.reg_lambda, "nthread": args.nthread, "seed": 0,
    }  # fmt: skip
    model = xgb.train(
        params,
        dtrain,
        num_boost_round=args.num_round,
        evals=[(dtrain, "train"), (dvalidation, "validation")],
        early_stopping_rounds=args.early_stopping_rounds or None,
        verbose_eval=False,
    )
    best = getattr(model, "best_iteration", model.num_boosted_rounds() - 1)
    predictions = model.predict(dvalidation, iteration_range=(0, best + 1))
    accuracy = float(((predictions > 0.5) == dvalidation.get_label()).mean())
    print(f"validation-accuracy={accuracy:.4f} rounds={model.num_boosted_rounds()}", flush=True)

    os.makedirs(args.model_dir, exist_ok=True)
    model.save_model(os.path.join(args.model_dir, "xgboost-model"))


if __name__ == "__main__":
    main()
