"""What the XGBoost hook saves of a model at a round besides the metrics: feature importance, SHAP values, trees
(smdebug's XGBoost tensor names). Pure functions of the booster, tested through the hook."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import xgboost as xgb

LOGGER = logging.getLogger(__name__)
IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")
#: Rows of the training set whose SHAP values are computed (pred_contribs costs a tree walk per row and feature).
SHAP_SAMPLE_ROWS = 200



def _feature_names(model: xgb.Booster) -> list[str]:
    return list(model.feature_names) if model.feature_names else [f"f{index}" for index in range(model.num_features())]


def feature_importance_tensors(model: xgb.Booster) -> dict[str, np.ndarray]:
    """feature_importance/<type>/<feature>, each type normalised to sum to 1, one-element arrays (as smdebug saves
    them)."""
    tensors = {}
    for kind in IMPORTANCE_TYPES:
        scores = model.get_score(importance_type=kind)
        total = sum(scores.values())
        for feature, score in scores.items():
            tensors[f"feature_importance/{kind}/{feature}"] = np.array([score / total if total else 0.0])
    return tensors


def shap_tensors(model: xgb.Booster, data: xgb.DMatrix, rows: int = SHAP_SAMPLE_ROWS) -> dict[str, np.ndarray]:
    """average_shap/<feature> and full_shap/<feature> over the first ``rows`` rows of ``data`` (XGBoost's own
    SHAP values, pred_contribs). As smdebug: the average is over the rows and, for a multi-class model, the classes
    (a one-element array per feature); the bias term (pred_contribs' last column) is not saved."""
    sample = data.slice(list(range(min(rows, data.num_row()))))
    contributions = np.asarray(model.predict(sample, pred_contribs=True))  # (rows, [classes,] features + 1)
    tensors: dict[str, np.ndarray] = {}
    for index, name in enumerate(_feature_names(model)):
        column = contributions[..., index]
        tensors[f"average_shap/{name}"] = np.array([column.mean()])
        tensors[f"full_shap/{name}"] = np.asarray(column)
    return tensors


def _walk(node: Mapping[str, Any], tree: int, depth: int, rows: list[tuple]) -> None:
    leaf = "leaf" in node
    children = {child["nodeid"]: child for child in node.get("children", [])}
    rows.append(
        (tree, node["nodeid"], depth, node.get("yes", -1), node.get("no", -1), node.get("gain", node.get("leaf", 0.0)),
         node.get("cover", 0.0))
    )  # fmt: skip
    if not leaf:
        for child in children.values():
            _walk(child, tree, depth + 1, rows)


def tree_tensors(model: xgb.Booster, step: int) -> dict[str, np.ndarray]:
    """trees/<column>: one row per node of the trees boosting round ``step`` added (all classes' trees); Depth is
    the node's depth (root 0), read from the model's JSON dump. Gain holds a leaf's value for leaves."""
    try:
        dumps = model[step : step + 1].get_dump(dump_format="json", with_stats=True)
    except (ValueError, xgb.core.XGBoostError) as error:  # e.g. a linear booster has no trees
        LOGGER.debug("no tree dump at round %d: %s", step, error)
        return {}
    first_tree = step * len(dumps)  # every round adds as many trees (one per class, per parallel tree)
    rows: list[tuple] = []
    for offset, text in enumerate(dumps):
        _walk(json.loads(text), first_tree + offset, 0, rows)
    if not rows:
        return {}
    columns = list(zip(*rows, strict=True))
    names = ("Tree", "Node", "Depth", "Yes", "No", "Gain", "Cover")
    kinds = (np.int64, np.int64, np.int64, np.int64, np.int64, np.float64, np.float64)
    return {f"trees/{name}": np.asarray(column, dtype=kind) for name, column, kind in zip(names, columns, kinds, strict=True)}
