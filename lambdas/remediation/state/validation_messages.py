"""Bad input, said clearly: the errors the workflow raises for a bad execution input or state payload,
and pydantic's validation errors turned into one readable problem per field.

    InvalidExecutionInput({"init_warmup_learning_rate": "must be > 0 (got -1)"})
    -> "invalid execution input: init_warmup_learning_rate: must be > 0 (got -1)"
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from contracts import ContractError
from contracts.suggestions import did_you_mean


class InvalidExecutionInput(ValueError):
    """The execution input breaks the rules; ``problems`` maps each bad field to what is wrong."""

    def __init__(self, problems: Mapping[str, str], what: str = "execution input"):
        self.problems = dict(problems)
        lines = "; ".join(f"{field}: {problem}" for field, problem in self.problems.items())
        super().__init__(f"invalid {what}: {lines}")


class InvalidState(InvalidExecutionInput):
    """The state payload a handler received breaks the rules; the message names each bad field."""

    def __init__(self, problems: Mapping[str, str]):
        super().__init__(problems, what="state payload")


#: Execution input keys with no default (they depend on the account), with what to give.
REQUIRED_KEY_HINTS = {
    "bucket": "the artifacts bucket's name, e.g. my-remediation-artifacts",
    "region": "the AWS region of the bucket and the jobs, e.g. us-east-1",
    "sm_role": "the SageMaker execution role ARN, e.g. arn:aws:iam::123456789012:role/SageMakerExecutionRole",
}


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_validation_error(error: ValidationError, known: Mapping[str, Any] | None = None) -> dict[str, str]:
    """pydantic's errors as {field path: 'must be ... (got ...)'}, one entry per bad field."""
    problems: dict[str, str] = {}
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        problem = _describe(item, known)
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, ContractError):
            # A shared contract's check names the field itself, from the value it was given
            # ("hyperparameters.lr"): that is the path, under the model's own path to the value's parent.
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            path = f"{parent}.{cause.field}" if parent else cause.field
            problem = cause.problem
        else:
            named = _NAMED_PROBLEM.match(problem) if item["type"] == "value_error" else None
            if named:
                path = f"{path}.{named['field']}" if path else named["field"]
                problem = named["problem"]
        path = path or "(input)"
        problems[path] = f"{problems[path]}; {problem}" if path in problems else problem
    return problems


#: The choices in pydantic's literal_error text: "'evidence', 'anchor' or 'declared'".
_QUOTED = re.compile(r"'([^']*)'")
_NAMED_PROBLEM = re.compile(r"^(?P<field>[A-Za-z_*][A-Za-z0-9_.\[\]*-]*): (?P<problem>.*)$", re.DOTALL)


def _describe(item: Mapping[str, Any], known: Mapping[str, Any] | None) -> str:
    kind = item["type"]
    context = item.get("ctx") or {}
    got = _shown(item.get("input"))
    if kind == "missing":
        hint = REQUIRED_KEY_HINTS.get(str(item["loc"][-1])) if item["loc"] else None
        return f"is required ({hint})" if hint else "is required"
    if kind == "extra_forbidden":
        given = item["loc"][-1] if item["loc"] else None
        allowed = f"{did_you_mean(given, known)}; allowed keys: {', '.join(sorted(known))}" if known else ""
        return f"is not a known key{allowed}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        sign = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}[kind]
        bound = next(iter(context.values()))
        return f"must be {sign} {bound} (got {got})"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"must be a whole number (got {got})"
    if kind == "finite_number":
        return f"must be a finite number (got {got})"
    if kind in ("float_parsing", "float_type"):
        return f"must be a number (got {got})"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false (got {got})"
    if kind in ("string_type", "string_too_short", "string_too_long"):
        if kind == "string_type":
            return f"must be a string (got {got})"
        limit = context.get("min_length", context.get("max_length"))
        return f"must have {'at least' if kind == 'string_too_short' else 'at most'} {limit} characters"
    if kind in ("too_long", "too_short"):
        limit = context.get("max_length", context.get("min_length"))
        return f"must have {'at most' if kind == 'too_long' else 'at least'} {limit} items"
    if kind == "literal_error":
        expected = str(context.get("expected", ""))
        choices = _QUOTED.findall(expected)
        return f"must be one of {expected} (got {got}){did_you_mean(item.get('input'), choices)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a JSON object (got {got})"
    if kind == "list_type":
        return f"must be a JSON list (got {got})"
    if kind == "value_error":
        message = str(context.get("error", item["msg"]))
        return message.removeprefix("Value error, ")
    return f"{item['msg']} (got {got})"


def _shown(value: Any) -> str:
    if isinstance(value, (Mapping, list)):
        text = json.dumps(value, default=str)
        return clip(text, 80)
    return clip(repr(value) if isinstance(value, str) else str(value), 80)
