"""notebooks/walkthrough.ipynb runs top to bottom (nbmake), its own cells asserting the key results; it is
committed without outputs."""

from __future__ import annotations

import pytest
from notebook_runs import REPO, cell_timeout, committed_code_sources, run_top_to_bottom

NOTEBOOK = REPO / "notebooks" / "walkthrough.ipynb"
#: nbmake's per-cell limit, from the notebook's metadata: the local run's cell trains two ResNet jobs (about a minute
#: on 2 idle cores; nbmake's default 300 s was too little on a loaded machine).
CELL_TIMEOUT_SECONDS = cell_timeout(NOTEBOOK)


def test_the_committed_notebook_has_no_outputs_and_guards_its_aws_section():
    sources = committed_code_sources(NOTEBOOK)
    assert "RUN_IN_AWS = False" in sources[0]
    aws_cells = [source for source in sources if "boto3" in source or "stepfunctions" in source or "s3://" in source]
    assert aws_cells and all(source.startswith("if RUN_IN_AWS:") for source in aws_cells)


@pytest.mark.training
@pytest.mark.timeout(2 * CELL_TIMEOUT_SECONDS)
def test_the_walkthrough_notebook_runs_top_to_bottom():
    run_top_to_bottom(NOTEBOOK, 2 * CELL_TIMEOUT_SECONDS)
