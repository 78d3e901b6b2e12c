"""The differential harness (tests/smdebug/differential.py): every corpus script under real smdebug 1.0.34 and under
ours, read back by the same reader, compared. Every difference found must be one the case documents
(tests/smdebug/differential_differences.py), and every difference a case documents must still be found; the table
in docs/smdebug-compatibility.md must be the one this run produces.

It needs the reference environment `make smdebug-reference` builds (`make test` builds it first); where that could
not be built the test is skipped, saying why. It is not a substitute for the unit tests of what it found
(tests/smdebug/test_smdebug_behaviour.py): those run under ours alone, everywhere."""

from __future__ import annotations

import differential
import pytest

pytestmark = [pytest.mark.differential, pytest.mark.training]


def test_every_corpus_script_reads_back_as_under_smdebug_1_0_34_or_differs_as_documented(tmp_path):
    unavailable = differential.reference_unavailable()
    if unavailable:
        pytest.skip(unavailable)
    rows = differential.rows(differential.run(tmp_path))
    assert len(rows) >= 25
    failing = [row for row in rows if not row.ok]
    assert not failing, "\n" + differential.report(rows)
    # one test, not two sharing a fixture: pytest-xdist would run the harness once per worker
    assert differential.documented_table() == differential.table(rows), (
        "docs/smdebug-compatibility.md is out of date: .venv/bin/python tests/smdebug/differential.py --table"
    )


def test_every_documented_difference_is_shown_by_a_case():
    named = {key for case in differential.CASES for key in case.differences}
    everywhere = {key for key, difference in differential.DIFFERENCES.items() if difference.everywhere}
    assert named <= set(differential.DIFFERENCES), named - set(differential.DIFFERENCES)
    assert set(differential.DIFFERENCES) == named | everywhere
