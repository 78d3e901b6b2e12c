"""`pytest --nbmake notebooks/<name>.ipynb`, as the README gives it and as the notebook tests run it: every cell runs
within the notebook's own limit, its metadata's ``execution.timeout`` (nbmake reads it itself), the one place that
limit is stated. pytest-timeout's project-wide limit (pyproject: 600 s per test) would cut a notebook that trains
on a loaded machine short, so it is lifted for notebooks: the per-cell limit bounds them."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.timeout(0))
