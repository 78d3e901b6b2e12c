"""smdebug's XGBoost hook from its Python API (docs/xgboost.md, "Use the Debugger hook"), as a training callback,
saving the metrics, predictions, labels, feature importance and hyperparameters every 5 rounds. The data are generated
(two classes, 6 features); the trees are grown exactly (tree_method "exact", base_score 0.5) so that XGBoost 1.7 and
3.x grow the same ones."""

import argparse

import numpy as np
import xgboost as xgb

from smdebug import SaveConfig
from smdebug.xgboost import Hook

parser = argparse.ArgumentParser()
parser.add_argument("--out_dir", required=True)
parser.add_argument("--num_round", type=int, default=12)
args = parser.parse_args()

rng = np.random.default_rng(21)
features = rng.normal(size=(240, 6))
labels = (features[:, 0] + 0.5 * features[:, 1] * features[:, 2] + 0.3 * rng.normal(size=240) > 0).astype(np.float32)
dtrain = xgb.DMatrix(features[:180], label=labels[:180])
dvalid = xgb.DMatrix(features[180:], label=labels[180:])
params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "eval_metric": "logloss", "tree_method": "exact", "base_score": 0.5, "seed": 0}

hook = Hook(
    out_dir=args.out_dir,
    save_config=SaveConfig(save_interval=5),
    include_collections=["metrics", "predictions", "labels", "feature_importance", "hyperparameters"],
    hyperparameters=params,
    train_data=dtrain,
    validation_data=dvalid,
)
booster = xgb.train(
    params, dtrain, num_boost_round=args.num_round, evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook]
)
