"""The nearest allowed name to a mistyped one, for the messages that refuse an unknown key or name:
``hyperparamters: is not a known key (did you mean 'hyperparameters'?); allowed keys: ...``. Standard library only.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: difflib's similarity ratio a name must reach to be suggested (its default: a typo or two in a word).
CUTOFF = 0.6


def nearest(given: object, allowed: Iterable[str]) -> str | None:
    """The allowed name closest to ``given`` (case, '-' and '_' aside), or None when none is close."""
    if not isinstance(given, str) or not given:
        return None
    by_form = {_form(name): name for name in allowed}
    found = difflib.get_close_matches(_form(given), list(by_form), n=1, cutoff=CUTOFF)
    return by_form[found[0]] if found else None


def did_you_mean(given: object, allowed: Iterable[str]) -> str:
    """`` (did you mean 'hyperparameters'?)``, or '' when no allowed name is close."""
    match = nearest(given, allowed)
    return f" (did you mean {match!r}?)" if match is not None and match != given else ""


def _form(name: str) -> str:
    return name.lower().replace("-", "_")
