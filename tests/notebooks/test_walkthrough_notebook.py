"""notebooks/walkthrough.ipynb runs top to bottom (nbmake), its own cells asserting the key results; it is
committed without outputs."""

from __future__ import annotations

import pytest
from notebook_runs import REPO, committed_code_sources, run_top_to_bottom

NOTEBOOK = REPO / "notebooks" / "walkthrough.ipynb"
#: nbmake's per-cell timeout: the local run's cell trains two ResNet jobs (about a minute on 2 idle cores).
CELL_TIMEOUT_SECONDS = 900


def test_the_committed_notebook_has_no_outputs_and_guards_its_aws_section():
    sources = committed_code_sources(NOTEBOOK)
    assert "RUN_IN_AWS = False" in sources[0]
    aws_cells = [source for source in sources if "boto3" in source or "stepfunctions" in source or "s3://" in source]
    assert aws_cells and all(source.startswith("if RUN_IN_AWS:") for source in aws_cells)


@pytest.mark.training
@pytest.mark.timeout(2 * CELL_TIMEOUT_SECONDS)
def test_the_walkthrough_notebook_runs_top_to_bottom():
    run_top_to_bottom(NOTEBOOK, CELL_TIMEOUT_SECONDS, 2 * CELL_TIMEOUT_SECONDS)
