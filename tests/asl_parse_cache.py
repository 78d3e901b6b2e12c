"""moto's Step Functions interpreter parses a definition with its ANTLR grammar each time a state machine is created
and again for every execution: about half a second of CPU for our ASL, paid twice by every workflow test. The parsed
program is a tree of components that an execution evaluates without changing (its state lives in the execution's
environment), except inside Map and Parallel states, which our ASL does not have; so the tests parse each definition
once per process. The real parser still reads every definition, and a definition it rejects is rejected as before."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator

#: States whose parsed components carry run-time state of their own (iteration workers, branch workers).
STATEFUL_STATE_TYPES = ("Map", "Parallel")


def _state_types(states: dict) -> Iterator[str]:
    for state in states.values():
        yield state.get("Type", "")
        for nested in ("Iterator", "ItemProcessor"):
            if isinstance(state.get(nested), dict):
                yield from _state_types(state[nested].get("States", {}))
        for branch in state.get("Branches", []):
            yield from _state_types(branch.get("States", {}))


def reusable(definition: str) -> bool:
    try:
        states = json.loads(definition).get("States", {})
    except (ValueError, AttributeError):
        return False
    return not any(kind in STATEFUL_STATE_TYPES for kind in _state_types(states))


@contextlib.contextmanager
def parse_each_definition_once() -> Iterator[None]:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    parse = AmazonStateLanguageParser.parse
    cached = functools.lru_cache(maxsize=16)(parse)

    def parse_once(definition: str):
        return cached(definition) if reusable(definition) else parse(definition)

    AmazonStateLanguageParser.parse = staticmethod(parse_once)
    try:
        yield
    finally:
        AmazonStateLanguageParser.parse = staticmethod(parse)
