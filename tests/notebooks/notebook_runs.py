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


def run_top_to_bottom(notebook: Path, cell_timeout_seconds: int, timeout_seconds: int) -> None:
    """Run every cell (nbmake), each within ``cell_timeout_seconds``, the whole within ``timeout_seconds``."""
    finished = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", f"timeout={timeout_seconds}", "--nbmake",
         f"--nbmake-timeout={cell_timeout_seconds}", str(notebook)],  # fmt: skip
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_seconds,
    )
    assert finished.returncode == 0, finished.stdout[-6000:] + finished.stderr[-2000:]
    assert "1 passed" in finished.stdout
