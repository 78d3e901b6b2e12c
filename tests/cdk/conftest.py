"""One synth of the real stack per test session (tests/cdk)."""

from __future__ import annotations

import pytest
from cdk_synth import Synthesized, synthesize


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Synthesized:
    return synthesize(tmp_path_factory.mktemp("cdk.out"))
