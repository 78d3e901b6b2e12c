"""moto's Step Functions interpreter parses a definition with its ANTLR grammar each time a state machine is created
and again for every execution: about half a second of CPU for our ASL, paid twice by every workflow test. The parsed
program is a tree of components that an execution evaluates without changing (its state lives in the execution's
environment), except inside Map and Parallel states, which our ASL does not have; so the tests parse each definition
once per process. The real parser still reads every definition, and a definition it rejects is rejected as before.

The same holds for the JSONPaths the interpreter evaluates (InputPath, Parameters' ".$" fields, ResultPath,
TimeoutSecondsPath, ...): it compiled each with jsonpath_ng's parser (which builds its grammar tables) at every
evaluation, a few percent of the workflow tests' CPU. A compiled path is immutable (finding or updating with it
changes only the data), so each path is compiled once per process."""

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
    path_modules = _json_path_modules()
    compile_paths = {module: module.parse for module in path_modules}
    for module, compile_path in compile_paths.items():
        module.parse = functools.lru_cache(maxsize=4096)(compile_path)
    try:
        yield
    finally:
        AmazonStateLanguageParser.parse = staticmethod(parse)
        for module, compile_path in compile_paths.items():
            module.parse = compile_path


def _json_path_modules() -> list:
    """moto 5.2's modules that compile JSONPaths with jsonpath_ng's ``parse`` (checked: an upgrade that moves it fails
    here)."""
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    for module in (json_path, result_path):
        if not callable(getattr(module, "parse", None)):
            raise AssertionError(f"moto's interpreter moved {module.__name__}.parse: update tests/asl_parse_cache.py")
    return [json_path, result_path]
