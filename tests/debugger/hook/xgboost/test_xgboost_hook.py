"""The XGBoost hook on a real (tiny) boosting run over scikit-learn's breast cancer data: what it saves, that a
trial reads the steps while the job still trains, that a rule's StopTraining stops boosting, that a script written
for smdebug's XGBoost hook runs unchanged, and that none of it imports torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from debugger.hook.stop_training import StopTrainingRequested
from debugger.trial import create_trial

pytestmark = pytest.mark.xdist_group("xgboost")  # tests/conftest.py's xgb fixture says why

REPO = Path(__file__).resolve().parents[4]
EXAMPLE = REPO / "examples" / "xgboost"
COLLECTIONS = ["metrics", "losses", "hyperparameters", "predictions", "labels", "feature_importance", "average_shap", "trees"]
OVERFITTING = {"objective": "binary:logistic", "max_depth": 10, "eta": 0.9, "min_child_weight": 0, "lambda": 0,
               "eval_metric": "logloss", "nthread": 1}  # fmt: skip


def hook_config(interval: int = 2) -> dict:
    return {"HookParameters": {"save_interval": str(interval)}, "CollectionConfigurations": [{"CollectionName": c} for c in COLLECTIONS]}


def trial_watcher(xgb, out_dir: Path):
    """Another reader of the debug output, looking after every round the hook recorded (the job is still training)."""

    class TrialWatcher(xgb.callback.TrainingCallback):
        def __init__(self):
            super().__init__()
            self.trial = create_trial(str(out_dir))
            self.seen: list[list[int]] = []

        def after_iteration(self, model, epoch, evals_log):
            if epoch % 2 == 0:  # a saved round: wait for its step file, as an analysis reading a live job does
                self.trial.wait_for_steps([epoch])
            self.seen.append(self.trial.steps())
            return False

    return TrialWatcher()


def test_the_hook_saves_smdebugs_xgboost_tensors_and_a_trial_reads_them_while_training(xgb, tmp_path, data):
    from debugger.hook.xgboost.hook import XGBoostHook

    dtrain, dval = data
    hook = XGBoostHook.from_configs(hook_config(), [], out_dir=tmp_path, job_name="xgb-job",
                                    hyperparameters=OVERFITTING, train_data=dtrain, validation_data=dval)  # fmt: skip
    watcher = trial_watcher(xgb, tmp_path)
    xgb.train({**OVERFITTING, "max_depth": 3, "eta": 0.3}, dtrain, 8, evals=[(dtrain, "train"), (dval, "validation")],
              callbacks=[hook, watcher], verbose_eval=False)  # fmt: skip
    hook.close()
    # saved every 2 rounds; the trial saw each saved step while boosting went on
    assert watcher.seen[:3] == [[0], [0], [0, 2]] and watcher.seen[-1] == [0, 2, 4, 6]
    assert not watcher.trial.training_ended() or len(watcher.seen) == 8
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 2, 4, 6]
    assert trial.training_ended()
    assert set(trial.tensor_names(collection="metrics")) == {"train-logloss", "validation-logloss"}
    assert trial.tensor_names(collection="losses") == trial.tensor_names(collection="metrics")
    assert trial.tensor("validation-logloss").value(6) < trial.tensor("validation-logloss").value(0)
    assert trial.tensor("labels").value(4).shape == (169,) and trial.tensor("predictions").value(4).shape == (169,)
    weights = [trial.tensor(name).value(6) for name in trial.tensor_names(regex="^feature_importance/weight/")]
    assert sum(weights) == pytest.approx(1.0)
    assert trial.tensor_names(regex="^feature_importance/gain/")
    # as smdebug: one value per feature (a one-element array), no bias term
    shap = trial.tensor_names(collection="average_shap")
    assert shap and "average_shap/bias" not in shap and trial.tensor(shap[0]).value(6).shape == (1,)
    depths = trial.tensor("trees/Depth").value(6)
    assert 1 <= depths.max() <= 3  # max_depth 3
    assert trial.tensor("hyperparameters/max_depth").value(0).tolist() == [10]
    status = json.loads((tmp_path / "rule-status.json").read_text())
    assert status["metrics"]["validation-logloss"]["step"] == 7


def test_overtraining_stops_an_overfitting_booster_through_stop_training(xgb, tmp_path, data):
    from debugger.hook.xgboost.hook import XGBoostHook

    dtrain, dval = data
    rules = [{"RuleConfigurationName": "Overtraining",
              "RuleParameters": {"rule_to_invoke": "Overtraining", "action_json": '[{"name": "StopTraining"}]'}}]  # fmt: skip
    hook = XGBoostHook.from_configs(hook_config(5), rules, out_dir=tmp_path, job_name="xgb-job", validation_data=dval)
    rounds = []
    counter = xgb.callback.TrainingCallback()
    counter.after_iteration = lambda model, epoch, log: rounds.append(epoch) and False
    with pytest.raises(StopTrainingRequested) as stop:
        xgb.train(OVERFITTING, dtrain, 100, evals=[(dtrain, "train"), (dval, "validation")], callbacks=[hook, counter],
                  verbose_eval=False)  # fmt: skip
    assert stop.value.rule_name == "Overtraining"
    assert stop.value.step == len(rounds) < 30  # the round it fired in is the last one boosted
    document = hook.close(training_ended=False)
    issue = document.rules[0].issue
    assert issue.tensor == "validation-logloss" and issue.kind == "validation_not_improving" and issue.value == 10
    assert document.evidence.learning_rate_at_issue is None  # no hyperparameters given to the hook


@pytest.mark.process
def test_a_script_for_smdebugs_xgboost_hook_runs_unchanged_without_torch(tmp_path):
    channels = tmp_path / "data"
    subprocess.run([sys.executable, str(EXAMPLE / "make_data.py"), "--out", str(channels)], check=True, capture_output=True)
    (tmp_path / "hook.json").write_text(json.dumps({"HookParameters": {"save_interval": 5}, "LocalPath": str(tmp_path / "x")}))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "SMDEBUG_CONFIG_FILE_PATH": str(tmp_path / "hook.json"),
        "DEBUG_OUTPUT_DIR": str(tmp_path / "debug"),
        "TRAINING_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "SM_CHANNEL_TRAIN": str(channels / "train"),
        "SM_CHANNEL_VALIDATION": str(channels / "validation"),
        "SM_MODEL_DIR": str(tmp_path / "model"),
    }
    # -X importtime lists every module imported: torch must not be one of them
    arguments = ["--num_round", "12", "--max_depth", "3", "--checkpoint_frequency", "5"]
    done = subprocess.run([sys.executable, "-X", "importtime", str(EXAMPLE / "train.py"), *arguments],
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "validation-accuracy=" in done.stdout
    assert " torch" not in done.stderr.replace("torch_", "")
    trial = create_trial(str(tmp_path / "debug"))
    assert trial.steps() == [0, 5, 10]  # smdebug's default collection: metrics
    assert trial.tensor_names() == ["train-logloss", "validation-logloss", "validation:accuracy"]  # + the script's
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["xgboost-checkpoint.10", "xgboost-checkpoint.5"]

    # a new job resumes from the newest checkpoint and boosts the rounds left; the steps go on counting
    env["DEBUG_OUTPUT_DIR"] = str(tmp_path / "debug-resumed")
    done = subprocess.run([sys.executable, str(EXAMPLE / "train.py"), *arguments[:-2], "--num_round", "16"],
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resuming from" in done.stdout and "rounds=16" in done.stdout
    assert create_trial(str(tmp_path / "debug-resumed")).steps() == [10, 15]
