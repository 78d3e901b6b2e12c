"""What the notebook tests share: reading a committed notebook's code cells, and running it top to bottom with
nbmake in a pytest of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def committed_code_sources(notebook: Path) -> list[str]:
    """The notebook's code cells' sources, after checking it is committed without outputs."""
    code_cells = [cell for cell in json.loads(notebook.read_text())["cells"] if cell["cell_type"] == "code"]
    assert code_cells and all(not cell["outputs"] and cell["execution_count"] is None for cell in code_cells)
    return ["".join(cell["source"]) for cell in code_cells]


def cell_timeout(notebook: Path) -> int:
    """The notebook's per-cell limit: its metadata's execution.timeout, which nbmake applies to every cell (the README's
    command and these tests run it with no limit of their own)."""
    return int(json.loads(notebook.read_text())["metadata"]["execution"]["timeout"])


#: How the notebooks are run, here and in the README: nbmake with the notebook's own per-cell limit
#: (notebooks/conftest.py lifts pytest-timeout's per-test limit for them).
NBMAKE_ARGUMENTS = ("-m", "pytest", "--nbmake")


def run_top_to_bottom(notebook: Path, timeout_seconds: int) -> None:
    """Run every cell (nbmake), each within the notebook's own limit, the whole within ``timeout_seconds``."""
    finished = subprocess.run(
        [sys.executable, *NBMAKE_ARGUMENTS, "-q", "-p", "no:cacheprovider", str(notebook.relative_to(REPO))],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_seconds,
    )
    assert finished.returncode == 0, finished.stdout[-6000:] + finished.stderr[-2000:]
    assert "1 passed" in finished.stdout
