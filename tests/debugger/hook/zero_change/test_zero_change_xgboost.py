"""Zero script change for XGBoost: a plain ``xgboost.train`` call (no hook in the script) gets the job's hook in its
callbacks, in this process, writing to a temporary directory."""

from __future__ import annotations

import pytest

from debugger.hook.stop_training import StopTrainingRequested
from debugger.trial import create_trial

pytestmark = pytest.mark.xdist_group("xgboost")  # tests/conftest.py's xgb fixture says why

STOP = '[{"name":"StopTraining"}]'
OVERFITTING = {"objective": "binary:logistic", "max_depth": 10, "eta": 0.9, "min_child_weight": 0, "lambda": 0,
               "eval_metric": "logloss", "nthread": 1}  # fmt: skip
OVERTRAINING = [{"RuleConfigurationName": "Overtraining",
                 "RuleParameters": {"rule_to_invoke": "Overtraining", "action_json": STOP}}]  # fmt: skip


@pytest.fixture
def watch(xgb, tmp_path):
    from debugger.hook.xgboost.hook import XGBoostHook
    from debugger.hook.zero_change.xgboost import XGBoostWatcher

    watchers: list[XGBoostWatcher] = []

    def make(rules=OVERTRAINING) -> XGBoostWatcher:
        def factory(params, dtrain, dvalidation):
            return XGBoostHook.from_configs(
                {"HookParameters": {"save_interval": "1"}}, rules, out_dir=tmp_path / "zero", job_name="zero",
                hyperparameters=params, train_data=dtrain, validation_data=dvalidation,
            )  # fmt: skip

        watcher = XGBoostWatcher(factory)
        watcher.install()
        watchers.append(watcher)
        return watcher

    yield make
    for watcher in watchers:
        watcher.uninstall()
        if watcher.hook is not None:
            watcher.hook.close()


def test_a_plain_xgboost_train_call_is_watched_and_stopped_by_its_rule(xgb, watch, data):
    watcher = watch()
    dtrain, dvalidation = data
    with pytest.raises(StopTrainingRequested) as stopped:
        xgb.train(OVERFITTING, dtrain, 100, evals=[(dtrain, "train"), (dvalidation, "validation")], verbose_eval=False)
    stop = stopped.value.step
    assert stopped.value.rule_name == "Overtraining" and 5 <= stop < 20  # its default patience: 10 rounds
    hook = watcher.hook
    assert hook.validation_data is dvalidation and hook.train_data is dtrain and hook.hyperparameters["eta"] == 0.9
    trial = create_trial(str(hook.out_dir))
    assert trial.steps() == list(range(stop + 1))  # every round saved, none after the stop
    assert {"train-logloss", "validation-logloss", "hyperparameters/eta"} <= set(trial.tensor_names())


def test_the_scikit_learn_estimators_fit_is_watched_too(xgb, watch, data):
    from sklearn.datasets import load_breast_cancer

    watcher = watch(rules=[])
    x, y = load_breast_cancer(return_X_y=True)
    xgb.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1).fit(x[:400], y[:400], eval_set=[(x[400:], y[400:])], verbose=False)
    watcher.hook.close()
    assert create_trial(str(watcher.hook.out_dir)).steps() == [0, 1, 2, 3]


def test_a_hook_in_the_scripts_own_callbacks_wins(xgb, watch, data, tmp_path):
    from debugger.hook.xgboost.hook import XGBoostHook

    watcher = watch()
    dtrain, dvalidation = data
    own = XGBoostHook.from_configs({"HookParameters": {"save_interval": "2"}}, [], out_dir=tmp_path / "own", job_name="own")
    xgb.train({**OVERFITTING, "max_depth": 2}, dtrain, 4, evals=[(dvalidation, "validation")], callbacks=[own], verbose_eval=False)
    own.close()
    assert watcher.stood_aside and watcher.hook is None and not (tmp_path / "zero").exists()
    assert create_trial(str(tmp_path / "own")).steps() == [0, 2]


def test_only_the_first_train_call_is_watched(xgb, watch, data, capsys):
    watcher = watch(rules=[])
    dtrain, dvalidation = data
    for rounds in (3, 5):  # a model, then a refit: its rounds would restart the step numbers
        xgb.train({**OVERFITTING, "max_depth": 2}, dtrain, rounds, evals=[(dvalidation, "validation")], verbose_eval=False)
    watcher.hook.close()
    assert create_trial(str(watcher.hook.out_dir)).steps() == [0, 1, 2]
    assert "watches the script's first xgboost.train call only" in capsys.readouterr().err
