"""Confusion, FeatureImportanceOverweight and TreeDepth fire on constructed XGBoost tensors and stay quiet on
healthy ones; their arithmetic is checked on its own."""

from __future__ import annotations

import numpy as np
import pytest
from rule_trials import make

from contracts import ContractError
from debugger.rules import builtin_rule_parameters
from debugger.rules.xgboost_rules import (
    confusion_matrix,
    confusion_violation,
    depth_from_node_ids,
    predicted_classes,
    top_share,
)
from debugger.trial.live_trial import LiveTrial


def saved(tmp_path, step: int, tensors: dict[str, tuple[str, object]]) -> LiveTrial:
    trial = LiveTrial(tmp_path)
    trial.begin_step(step)
    trial.add_saved_step(
        step,
        {name: np.asarray(value) for name, (_, value) in tensors.items()},
        {name: [collection] for name, (collection, _) in tensors.items()},
    )
    return trial


def test_predicted_classes_read_probabilities_and_classes():
    assert predicted_classes(np.array([0.2, 0.7, 0.5])).tolist() == [0, 1, 0]
    assert predicted_classes(np.array([[0.1, 0.9, 0.0], [0.6, 0.3, 0.1]])).tolist() == [1, 0]
    assert predicted_classes(np.array([2.0, 0.0, 1.0])).tolist() == [2, 0, 1]


def test_confusion_matrix_and_its_column_shares():
    matrix = confusion_matrix(np.array([0, 0, 1, 1, 1, 2]), np.array([0, 1, 1, 1, 1, 2]))
    assert matrix.tolist() == [[1, 1, 0], [0, 3, 0], [0, 0, 1]]
    # predicted 1: 3 of 4 are class 1 (0.75 < 0.9)
    assert confusion_violation(matrix, 0.9, 0.3) == ("diagonal_below_min", 0.75, "of the 4 samples predicted as 1")
    assert confusion_violation(matrix, 0.7, 0.2) == ("off_diagonal_above_max", 0.25, "class 0 among the samples predicted as 1")
    assert confusion_violation(matrix, 0.7, 0.3) is None
    with pytest.raises(ValueError, match="classes 0..1"):
        confusion_matrix(np.array([0, 2]), np.array([0, 1]), category_no=2)


def test_confusion_fires_on_a_model_that_calls_most_samples_one_class(tmp_path):
    labels = np.array([0] * 50 + [1] * 50, dtype=np.float32)
    probabilities = np.array([0.9] * 30 + [0.1] * 20 + [0.8] * 50, dtype=np.float32)  # 30 of class 0 called 1
    trial = saved(tmp_path, 10, {"labels": ("labels", labels), "predictions": ("predictions", probabilities)})
    rule = make("Confusion", trial)
    assert rule.invoke_at_step(10) is True
    assert rule.finding.tensor == "predictions" and rule.finding.kind == "diagonal_below_min"
    assert rule.finding.value == pytest.approx(50 / 80)
    assert "[[20, 30], [0, 50]]" in rule.finding.message


def test_confusion_stays_quiet_on_a_good_classifier_and_without_predictions(tmp_path):
    labels = np.arange(100) % 4
    good = np.eye(4)[labels] * 0.9 + 0.025
    trial = saved(tmp_path, 0, {"labels": ("labels", labels), "predictions": ("predictions", good)})
    assert make("Confusion", trial, category_no="4").invoke_at_step(0) is False
    only_labels = saved(tmp_path / "only", 0, {"labels": ("labels", labels)})
    assert make("Confusion", only_labels).invoke_at_step(0) is False


def test_confusion_finds_the_tensors_by_collection(tmp_path):
    labels = np.array([0, 1, 0, 1])
    trial = saved(tmp_path, 0, {"y_true": ("labels", labels), "y_pred": ("predictions", np.array([1, 0, 1, 0]))})
    rule = make("Confusion", trial)
    assert rule.invoke_at_step(0) is True and rule.finding.tensor == "y_pred"


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"min_diag": "1.5"}, "rule.min_diag: is a fraction: must be between 0 and 1"),
        ({"category_no": "1"}, "rule.category_no: must be >= 2"),
        ({"labels": ""}, "rule.labels: must be a tensor or collection name"),
    ],
)
def test_bad_confusion_parameters_name_the_field(parameters, message):
    with pytest.raises(ContractError) as error:
        builtin_rule_parameters("Confusion", parameters, "rule")
    assert message in str(error.value)


def importance(weights: dict[str, float]) -> dict[str, tuple[str, float]]:
    total = sum(weights.values())
    return {f"feature_importance/weight/{name}": ("feature_importance", value / total) for name, value in weights.items()}


def test_top_share():
    assert top_share({"a": 5.0, "b": 3.0, "c": 1.0, "d": 1.0}, 2) == (pytest.approx(0.8), ["a", "b"])
    assert top_share({}, 3) == (0.0, [])


def test_feature_importance_overweight_fires_when_three_features_carry_the_model(tmp_path):
    tensors = importance({"f0": 40, "f1": 30, "f2": 15, "f3": 5, "f4": 5, "f5": 5})
    tensors["feature_importance/gain/f9"] = ("feature_importance", 1.0)  # another importance type: not selected
    trial = saved(tmp_path, 5, tensors)
    rule = make("FeatureImportanceOverweight", trial)
    assert rule.invoke_at_step(5) is True
    assert rule.finding.value == pytest.approx(0.85)
    assert rule.finding.tensor == "feature_importance/weight/f0"
    assert "(f0, f1, f2) hold 85.0%" in rule.finding.message


def test_feature_importance_overweight_stays_quiet_on_spread_importance(tmp_path):
    trial = saved(tmp_path, 5, importance({f"f{index}": 10 - index % 3 for index in range(10)}))
    assert make("FeatureImportanceOverweight", trial).invoke_at_step(5) is False
    few = saved(tmp_path / "few", 5, importance({"f0": 9, "f1": 1}))  # 2 features: the top 3 always hold all
    assert make("FeatureImportanceOverweight", few).invoke_at_step(5) is False


def test_tree_depth_reads_the_saved_depth_or_estimates_it_from_node_ids(tmp_path):
    deep = saved(tmp_path, 3, {"trees/Depth": ("trees", np.array([0, 1, 1, 2, 2, 3, 3, 6, 6]))})
    rule = make("TreeDepth", deep)
    assert rule.invoke_at_step(3) is True and rule.finding.value == 6 and rule.finding.kind == "too_deep"
    shallow = saved(tmp_path / "shallow", 3, {"trees/Depth": ("trees", np.array([0, 1, 1, 2, 2]))})
    assert make("TreeDepth", shallow).invoke_at_step(3) is False
    assert depth_from_node_ids(np.arange(7)) == pytest.approx(np.log2(6))
    by_ids = saved(tmp_path / "ids", 3, {"trees/Node": ("trees", np.arange(64))})
    assert make("TreeDepth", by_ids, depth="5").invoke_at_step(3) is True  # log2(63) = 5.98
