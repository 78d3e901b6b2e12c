"""notebooks/xgboost_realtime.ipynb runs top to bottom (nbmake): it reads a live XGBoost job's trial while the job
boosts, its own cells asserting that rounds were read while boosting and that the confusion matrix filled in; it is
committed without outputs."""

from __future__ import annotations

import pytest
from notebook_runs import REPO, cell_timeout, committed_code_sources, run_top_to_bottom

NOTEBOOK = REPO / "notebooks" / "xgboost_realtime.ipynb"
#: nbmake's per-cell limit, from the notebook's metadata: the job boosts for a few seconds; the live cell draws 30
#: figures.
CELL_TIMEOUT_SECONDS = cell_timeout(NOTEBOOK)


def test_the_committed_notebook_has_no_outputs():
    sources = "\n".join(committed_code_sources(NOTEBOOK))
    assert "wait_for_steps" in sources and "create_trial" in sources  # smdebug's real-time reading


@pytest.mark.training
@pytest.mark.timeout(4 * CELL_TIMEOUT_SECONDS)
def test_the_xgboost_realtime_notebook_runs_top_to_bottom():
    run_top_to_bottom(NOTEBOOK, 4 * CELL_TIMEOUT_SECONDS)
