"""SageMaker Debugger's XGBoost rules: Confusion, FeatureImportanceOverweight, TreeDepth, with the parameters and
defaults of the AWS developer guide ("List of Debugger built-in rules"), on the tensors the XGBoost hook saves
(:mod:`debugger.hook.xgboost.hook`, the names smdebug's XGBoost hook uses):

    labels, predictions                         the validation set's labels and the model's predictions
    feature_importance/<type>/<feature>         normalised importance per type (weight, gain, cover, ...)
    trees/Tree, trees/Node, trees/Depth, ...    the trees added in the round, one row per node

The pure arithmetic (confusion matrix, top-n share, tree depth) is in functions of its own, tested alone.
"""

from __future__ import annotations

import math

import numpy as np

from debugger.rules.rule import Requirement, Rule
from debugger.rules.tensor_selection import Selection as _Selection

FEATURE_IMPORTANCE = "feature_importance"
TREES = "trees"
TREE_DEPTH_TENSOR = "trees/Depth"
TREE_NODE_TENSOR = "trees/Node"


# --------------------------------------------------------------------------- pure arithmetic


def predicted_classes(predictions: np.ndarray) -> np.ndarray:
    """Class indices from what an XGBoost model predicts: probabilities per class (multi:softprob, 2-d) by argmax,
    a binary probability (binary:logistic, values in [0, 1] not all whole) by the 0.5 cut, class indices as they are."""
    array = np.asarray(predictions, dtype=np.float64)
    if array.ndim > 1:
        return array.argmax(axis=-1).astype(np.int64)
    array = array.reshape(-1)
    if array.size and np.all((array >= 0) & (array <= 1)) and not np.all(array == np.round(array)):
        return (array > 0.5).astype(np.int64)
    return np.round(array).astype(np.int64)


def confusion_matrix(labels: np.ndarray, predictions: np.ndarray, category_no: int | None = None) -> np.ndarray:
    """``confusion[label][prediction]``: how many samples of each class were predicted as each class."""
    truth = np.round(np.asarray(labels, dtype=np.float64).reshape(-1)).astype(np.int64)
    guess = predicted_classes(predictions)
    if truth.size != guess.size:
        raise ValueError(f"labels ({truth.size}) and predictions ({guess.size}) differ in length")
    size = category_no or int(max(truth.max(initial=0), guess.max(initial=0)) + 1)
    if truth.size and (truth.min() < 0 or guess.min() < 0 or truth.max() >= size or guess.max() >= size):
        raise ValueError(f"labels and predictions must be classes 0..{size - 1} (category_no {size})")
    matrix = np.zeros((size, size), dtype=np.int64)
    np.add.at(matrix, (truth, guess), 1)
    return matrix


def confusion_violation(matrix: np.ndarray, min_diag: float, max_off_diag: float) -> tuple[str, float, str] | None:
    """The first failed test of the Confusion rule, as (kind, value, where), or None.

    Each column (a predicted class) is normalised by its total: the diagonal share (how many of the samples
    predicted as class i are class i) must be >= ``min_diag``, each off-diagonal share (how many are class j)
    <= ``max_off_diag``. The AWS guide writes the diagonal's denominator as sum_j confusion[j][j]; with it a
    ten-class model at 100% accuracy would fail min_diag 0.9, so the column total is what is meant (it is the
    off-diagonal test's denominator there). A class never predicted has no column to judge."""
    totals = matrix.sum(axis=0)
    for column in range(matrix.shape[1]):
        if totals[column] == 0:
            continue
        diagonal = matrix[column, column] / totals[column]
        if diagonal < min_diag:
            return "diagonal_below_min", float(diagonal), f"of the {totals[column]} samples predicted as {column}"
        for row in range(matrix.shape[0]):
            share = matrix[row, column] / totals[column]
            if row != column and share > max_off_diag:
                return "off_diagonal_above_max", float(share), f"class {row} among the samples predicted as {column}"
    return None


def top_share(importances: dict[str, float], nfeatures: int) -> tuple[float, list[str]]:
    """(share of the ``nfeatures`` largest importances in the total, their names)."""
    finite = {name: value for name, value in importances.items() if math.isfinite(value) and value >= 0}
    total = sum(finite.values())
    if total <= 0:
        return 0.0, []
    top = sorted(finite, key=finite.get, reverse=True)[:nfeatures]
    return sum(finite[name] for name in top) / total, top


def depth_from_node_ids(node_ids: np.ndarray) -> float:
    """The AWS guide's measure of a tree's depth: the base 2 logarithm of its largest node id (0 for a stump)."""
    largest = float(np.max(node_ids)) if np.size(node_ids) else 0.0
    return math.log2(largest) if largest >= 1 else 0.0


# --------------------------------------------------------------------------- rules


class Confusion(Rule):
    """Fires when the confusion matrix of the labels and predictions saved at a step fails ``min_diag`` or
    ``max_off_diag`` (see :func:`confusion_violation`). ``labels`` / ``predictions`` name a tensor; when no tensor
    has that name, the first tensor of ``labels_collection`` / ``predictions_collection`` is read."""

    def __init__(
        self,
        base_trial,
        category_no: int | None = None,
        labels: str = "labels",
        predictions: str = "predictions",
        labels_collection: str = "labels",
        predictions_collection: str = "predictions",
        min_diag: float = 0.9,
        max_off_diag: float = 0.1,
    ):
        super().__init__(base_trial)
        self.category_no = category_no
        self.labels, self.predictions = labels, predictions
        self.labels_collection, self.predictions_collection = labels_collection, predictions_collection
        self.min_diag, self.max_off_diag = min_diag, max_off_diag

    def requirements(self) -> list[Requirement]:
        return [Requirement(self.labels_collection), Requirement(self.predictions_collection)]

    def _tensor(self, name: str, collection: str, step: int) -> str | None:
        available = self.base_trial.names_at(step)
        if name in available:
            return name
        members = self.base_trial._names()
        return next((tensor for tensor in sorted(available) if collection in members.get(tensor, ())), None)

    def invoke_at_step(self, step: int) -> bool:
        labels = self._tensor(self.labels, self.labels_collection, step)
        predictions = self._tensor(self.predictions, self.predictions_collection, step)
        if labels is None or predictions is None:
            return False
        matrix = confusion_matrix(
            self.base_trial.tensor(labels).value(step), self.base_trial.tensor(predictions).value(step), self.category_no
        )
        violation = confusion_violation(matrix, self.min_diag, self.max_off_diag)
        if violation is None:
            return False
        kind, value, where = violation
        bound = f">= min_diag {self.min_diag:g}" if kind == "diagonal_below_min" else f"<= max_off_diag {self.max_off_diag:g}"
        self.report(predictions, value, f"confusion at step {step}: {value:.3g} {where}, must be {bound}; matrix {matrix.tolist()}")
        self.finding.kind = kind
        return True


class FeatureImportanceOverweight(Rule):
    """Fires when the ``nfeatures`` largest feature importances among the tensors matching ``tensor_regex`` hold
    more than ``threshold`` of their total at a step (default: the weight importance, how often each feature
    splits). The value reported is that share."""

    def __init__(self, base_trial, threshold: float = 0.8, nfeatures: int = 3, tensor_regex=()):
        super().__init__(base_trial)
        self.threshold = threshold
        self.nfeatures = nfeatures
        self._selection = _Selection(base_trial, [], tuple(tensor_regex))

    def requirements(self) -> list[Requirement]:
        return [Requirement(FEATURE_IMPORTANCE)]

    def invoke_at_step(self, step: int) -> bool:
        importances = {name: float(np.asarray(value).reshape(-1)[0]) for name, value in self._selection.values_at(step)}
        if len(importances) <= self.nfeatures:
            return False  # the top n of n features always hold everything
        share, top = top_share(importances, self.nfeatures)
        if share <= self.threshold:
            return False
        features = ", ".join(name.rsplit("/", 1)[-1] for name in top)
        self.report(
            top[0],
            share,
            f"the {self.nfeatures} most important of {len(importances)} features ({features}) hold {share:.1%} of the "
            f"importance at step {step} > threshold {self.threshold:g}",
        )
        self.finding.kind = "overweight"
        return True


class TreeDepth(Rule):
    """Fires when a tree added at a step is deeper than ``depth``. The depth is ``trees/Depth`` (the longest
    root-to-leaf path, which the XGBoost hook reads from the model's own dump) when saved, else the AWS guide's
    estimate, log2 of the largest node id in ``trees/Node``. The value reported is the depth."""

    def __init__(self, base_trial, depth: float = 4.0):
        super().__init__(base_trial)
        self.depth = depth

    def requirements(self) -> list[Requirement]:
        return [Requirement(TREES)]

    def invoke_at_step(self, step: int) -> bool:
        available = self.base_trial.names_at(step)
        if TREE_DEPTH_TENSOR in available:
            depths = np.asarray(self.base_trial.tensor(TREE_DEPTH_TENSOR).value(step), dtype=np.float64)
            found, tensor = (float(depths.max()) if depths.size else 0.0), TREE_DEPTH_TENSOR
        elif TREE_NODE_TENSOR in available:
            found, tensor = depth_from_node_ids(self.base_trial.tensor(TREE_NODE_TENSOR).value(step)), TREE_NODE_TENSOR
        else:
            return False
        if found <= self.depth:
            return False
        self.report(tensor, found, f"a tree added at step {step} is {found:g} deep > depth {self.depth:g}")
        self.finding.kind = "too_deep"
        return True


XGBOOST_RULES: dict[str, type[Rule]] = {
    rule.__name__: rule for rule in (Confusion, FeatureImportanceOverweight, TreeDepth)
}
