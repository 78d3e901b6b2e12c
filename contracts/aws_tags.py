"""SageMaker's tag shape, stated once. Standard library only.

A tag value is at most 256 characters of ``[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]`` (letters, separators, numbers and
``_ . : / = + - @``; the SageMaker API reference's Tag.Value pattern). botocore's request validation does not check
patterns, so a value outside it passes every offline check and fails only at CreateTrainingJob: a Step Functions
execution name may hold ``!``, ``'``, ``(``, ``)``, ``'`` or ``*``-free punctuation SageMaker refuses in a tag.
"""

from __future__ import annotations

import unicodedata

MAX_TAG_VALUE_LENGTH = 256
MAX_TAG_KEY_LENGTH = 128
MAX_TAGS = 50
TAG_VALUE_PUNCTUATION = frozenset("_.:/=+-@")
#: What stands in for a character a tag value may not hold.
REPLACEMENT = "_"


def allowed_in_tag_value(character: str) -> bool:
    """Whether SageMaker's Tag.Value pattern admits ``character`` (\\p{L}, \\p{Z}, \\p{N} or the punctuation)."""
    category = unicodedata.category(character)
    return category[0] in ("L", "Z", "N") or character in TAG_VALUE_PUNCTUATION


def tag_value(text: str) -> str:
    """``text`` as a valid tag value: each character the pattern refuses replaced by ``_``, cut to 256."""
    return "".join(c if allowed_in_tag_value(c) else REPLACEMENT for c in text)[:MAX_TAG_VALUE_LENGTH]


def check_tag_value(value: str) -> str:
    """ValueError naming the first character SageMaker would refuse."""
    if len(value) > MAX_TAG_VALUE_LENGTH:
        raise ValueError(f"a tag value has at most {MAX_TAG_VALUE_LENGTH} characters (got {len(value)})")
    for character in value:
        if not allowed_in_tag_value(character):
            raise ValueError(f"a tag value may not hold {character!r} (SageMaker's pattern [\\p{{L}}\\p{{Z}}\\p{{N}}_.:/=+\\-@]*)")
    return value
