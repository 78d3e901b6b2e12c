"""smdebug's refresh controls: a trial reloads new steps when queried, unless inside ``no_refresh``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def _as_list(trials) -> list:
    return list(trials) if isinstance(trials, (list, tuple, set)) else [trials]


@contextlib.contextmanager
def _refreshing(trials, value: bool) -> Iterator[None]:
    trials = _as_list(trials)
    before = [trial.dynamic_refresh for trial in trials]
    for trial in trials:
        trial.dynamic_refresh = value
    try:
        yield
    finally:
        for trial, previous in zip(trials, before, strict=True):
            trial.dynamic_refresh = previous


def no_refresh(trials):
    """Inside the block the trial(s) do not look for new steps."""
    return _refreshing(trials, False)


def refresh(trials):
    """Inside the block the trial(s) look for new steps whenever queried (the default)."""
    return _refreshing(trials, True)
