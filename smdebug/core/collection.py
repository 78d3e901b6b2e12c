from debugger.core import collection as _collection
from debugger.core.collection import Collection


class CollectionKeys:
    """smdebug's collection names (a PyTorch hook has all, default, weights, biases, gradients, losses)."""

    DEFAULT = _collection.DEFAULT
    ALL = _collection.ALL
    WEIGHTS = _collection.WEIGHTS
    BIASES = _collection.BIASES
    GRADIENTS = _collection.GRADIENTS
    LOSSES = _collection.LOSSES
    METRICS = _collection.METRICS
    SM_METRICS = _collection.SM_METRICS
    INPUTS = "inputs"
    OUTPUTS = "outputs"
    # XGBoost's (smdebug.xgboost)
    HYPERPARAMETERS = "hyperparameters"
    PREDICTIONS = "predictions"
    LABELS = "labels"
    FEATURE_IMPORTANCE = "feature_importance"
    AVERAGE_SHAP = "average_shap"
    FULL_SHAP = "full_shap"
    TREES = "trees"


__all__ = ["Collection", "CollectionKeys"]
