"""`pytest --nbmake notebooks/<name>.ipynb` holds each cell to the notebook's own limit (its metadata's
execution.timeout), and not the whole notebook to pytest-timeout's per-test limit: notebooks/conftest.py, on a
notebook of a few seconds in a copy of notebooks/."""

from __future__ import annotations

import shutil
import subprocess
import sys

import nbformat
import pytest
from notebook_runs import NBMAKE_ARGUMENTS, REPO

#: Twice the 1 s limits below: past either by a second whatever the machine's speed (sleep is a lower bound).
CELL = "import time\ntime.sleep(2)"


@pytest.fixture
def notebooks(tmp_path):
    directory = tmp_path / "notebooks"
    directory.mkdir()
    shutil.copy(REPO / "notebooks" / "conftest.py", directory / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return directory


def run(notebooks, cell_limit: int, *options: str) -> subprocess.CompletedProcess:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    notebook.metadata["execution"] = {"timeout": cell_limit}
    nbformat.write(notebook, notebooks / "sleeps.ipynb")
    return subprocess.run([sys.executable, *NBMAKE_ARGUMENTS, "-q", "-p", "no:cacheprovider", *options,
                           "notebooks/sleeps.ipynb"], cwd=notebooks.parent, capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.process
def test_a_cell_runs_within_the_notebooks_own_limit_not_pytest_timeouts(notebooks):
    done = run(notebooks, 60, "-o", "timeout=1")  # a per-test limit below the cell's 2 s does not cut it
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:]


@pytest.mark.process
def test_a_cell_that_passes_the_notebooks_limit_fails(notebooks):
    done = run(notebooks, 1)
    assert done.returncode != 0 and "1 failed" in done.stdout, done.stdout[-3000:]
