"""smdebug's XGBoost hook with its defaults (docs/xgboost.md): out_dir and the data, nothing else; XGBoost's default
evaluation metric. Generated regression data; exact trees so that XGBoost 1.7 and 3.x grow the same ones."""

import sys

import numpy as np
import xgboost as xgb

from smdebug.xgboost import Hook

rng = np.random.default_rng(22)
features = rng.normal(size=(200, 4))
target = 2.0 * features[:, 0] - features[:, 3] + 0.1 * rng.normal(size=200)
dtrain = xgb.DMatrix(features[:150], label=target[:150])
dvalid = xgb.DMatrix(features[150:], label=target[150:])
params = {"objective": "reg:squarederror", "max_depth": 2, "eta": 0.5, "tree_method": "exact", "base_score": 0.0}

hook = Hook(out_dir=sys.argv[1], train_data=dtrain, validation_data=dvalid)
xgb.train(params, dtrain, num_boost_round=21, evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook])
