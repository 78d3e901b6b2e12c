"""An XGBoost script in SageMaker's framework mode (docs/xgboost.md, "Use XGBoost as a framework"): the hook from the
configuration file SageMaker writes, its data and hyperparameters set as attributes. Generated data, three classes;
exact trees and base_score 0.5 so that XGBoost 1.7 and 3.x grow the same ones."""

import numpy as np
import xgboost as xgb

from smdebug.xgboost import Hook

rng = np.random.default_rng(23)
features = rng.normal(size=(210, 5))
labels = np.argmax(features[:, :3] + 0.2 * rng.normal(size=(210, 3)), axis=1).astype(np.float32)
dtrain = xgb.DMatrix(features[:150], label=labels[:150])
dvalid = xgb.DMatrix(features[150:], label=labels[150:])
params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "eta": 0.4, "eval_metric": "mlogloss", "tree_method": "exact", "base_score": 0.5}

hook = Hook.create_from_json_file()
hook.train_data = dtrain  # required
hook.validation_data = dvalid  # optional
hook.hyperparameters = params  # optional
xgb.train(params, dtrain, num_boost_round=7, evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook])
