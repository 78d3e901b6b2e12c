"""Fixtures the hook tests share."""

import numpy as np
import pytest


@pytest.fixture(scope="module")
def data(xgb):
    """scikit-learn's bundled breast-cancer set, shuffled once: (train, validation) DMatrix, 400 and 169 rows."""
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    return xgb.DMatrix(x[:400], label=y[:400]), xgb.DMatrix(x[400:], label=y[400:])
