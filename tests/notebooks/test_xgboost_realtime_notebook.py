"""notebooks/xgboost_realtime.ipynb runs top to bottom (nbmake): it reads a live XGBoost job's trial while the job
boosts, its own cells asserting that rounds were read while boosting and that the confusion matrix filled in; it is
committed without outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "xgboost_realtime.ipynb"
#: nbmake's per-cell timeout: the job boosts for a few seconds; the live cell draws 30 figures.
CELL_TIMEOUT_SECONDS = 300


def test_the_committed_notebook_has_no_outputs():
    notebook = json.loads(NOTEBOOK.read_text())
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code_cells and all(not cell["outputs"] and cell["execution_count"] is None for cell in code_cells)
    sources = "\n".join("".join(cell["source"]) for cell in code_cells)
    assert "wait_for_steps" in sources and "create_trial" in sources  # smdebug's real-time reading


@pytest.mark.training
@pytest.mark.timeout(4 * CELL_TIMEOUT_SECONDS)
def test_the_xgboost_realtime_notebook_runs_top_to_bottom():
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", f"timeout={4 * CELL_TIMEOUT_SECONDS}",
         "--nbmake", f"--nbmake-timeout={CELL_TIMEOUT_SECONDS}", str(NOTEBOOK)],  # fmt: skip
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=4 * CELL_TIMEOUT_SECONDS,
    )
    assert finished.returncode == 0, finished.stdout[-6000:] + finished.stderr[-2000:]
    assert "1 passed" in finished.stdout
