"""ClassImbalance on a real XGBoost job's saved labels and predictions: binary:logistic predicts P(class 1), which
the rule cuts at 0.5 (truncated to an integer, every positive sample counted as mispredicted and the rule fired on a
healthy model); it fires on a data set made imbalanced, with the ratio the planner's scale_pos_weight remedy reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytestmark = pytest.mark.xdist_group("xgboost")  # tests/conftest.py's xgb fixture says why

PARAMS = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "eval_metric": "logloss", "nthread": 1}
HOOK = {"HookParameters": {"save_interval": "2"},
        "CollectionConfigurations": [{"CollectionName": name} for name in ("metrics", "losses", "predictions", "labels")]}  # fmt: skip
#: The documented defaults but samples: the 169-sample validation set, seen at every saved round, passes 500
#: labels at the fourth saved round.
RULES = [{"RuleConfigurationName": "ClassImbalance", "RuleParameters": {"rule_to_invoke": "ClassImbalance"}}]


def boost(xgb, tmp_path, x, y) -> dict:
    from debugger.hook.xgboost.hook import XGBoostHook

    order = np.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    cut = len(y) * 7 // 10
    dtrain, dval = xgb.DMatrix(x[:cut], label=y[:cut]), xgb.DMatrix(x[cut:], label=y[cut:])
    hook = XGBoostHook.from_configs(HOOK, RULES, out_dir=tmp_path, job_name="xgb-imbalance", train_data=dtrain,
                                    validation_data=dval, hyperparameters=PARAMS)  # fmt: skip
    xgb.train(PARAMS, dtrain, 20, evals=[(dtrain, "train"), (dval, "validation")], callbacks=[hook], verbose_eval=False)
    hook.close()
    (status,) = json.loads((tmp_path / "rule-status.json").read_text())["rules"]  # what the monitor reads
    return status


def test_a_healthy_binary_model_is_not_called_mispredicting(xgb, tmp_path):
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)  # 212 malignant (0), 357 benign (1): ratio 1.7
    status = boost(xgb, tmp_path, x, y)
    assert status["RuleEvaluationStatus"] == "NoIssuesFound", status


def test_an_imbalanced_binary_set_fires_with_its_ratio(xgb, tmp_path):
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    keep = np.flatnonzero(y == 1).tolist() + np.flatnonzero(y == 0)[:15].tolist()  # 357 benign, 15 malignant
    status = boost(xgb, tmp_path, x[keep], y[keep])
    assert status["RuleEvaluationStatus"] == "IssuesFound", status
    issue = status["issue"]
    assert issue["kind"] == "imbalance"
    assert issue["value"] == pytest.approx(357 / 15, rel=0.35)  # the validation split's own counts
    assert "imbalance" in issue["message"] and "class 1 has" in issue["message"]
