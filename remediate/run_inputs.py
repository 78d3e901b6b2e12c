"""The command-line options that describe a run, merged into a run_spec: the same for `local run` and
`cloud start`.

    --source-dir DIR --entry-point train.py        your script
    --hyperparameters lr=0.1 grad_clip=0            its hyperparameters (JSON values: 0.1, true, "text")
    --objective "test:accuracy>=0.9"                what good means (>= maximizes, <= minimizes)
    --channel train=DIR                             a data channel (repeatable)

Options override the run_spec file's keys; hyperparameters and channels are
merged key by key. Every problem is a :class:`RunSpecError` naming the option.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path
from typing import Any

from remediate.run_spec_file import RunSpecError

_OBJECTIVE = re.compile(r"^\s*(?P<metric>[^<>=\s][^<>=]*?)\s*(?P<op>>=|<=)\s*(?P<target>\S+)\s*$")


def add_script_options(parser: argparse.ArgumentParser) -> None:
    script = parser.add_argument_group("your training script (leave out to run the built-in example)")
    script.add_argument("--source-dir", metavar="DIR", help="the directory holding your training script")
    script.add_argument("--entry-point", metavar="FILE", help="the script to run, relative to --source-dir")
    script.add_argument(
        "--hyperparameters",
        nargs="+",
        metavar="NAME=VALUE",
        help="the script's hyperparameters; values are read as JSON (0.1, 3, true, \"text\") or taken as text",
    )
    script.add_argument("--objective", metavar="METRIC>=TARGET", help='e.g. "test:accuracy>=0.9" or "val_loss<=0.2"')
    script.add_argument(
        "--channel", action="append", metavar="NAME=DIR", help="a data channel the script reads (repeatable)"
    )


def parse_hyperparameters(pairs: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in pairs:
        name, separator, text = pair.partition("=")
        if not separator or not name:
            raise RunSpecError(f"--hyperparameters {pair!r}: write NAME=VALUE, e.g. lr=0.1")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text  # plain text such as relu
        except ValueError:
            value = None  # json reads NaN and Infinity, which JSON does not have
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        if isinstance(value, (dict, list)) or value is None:
            raise RunSpecError(
                f"--hyperparameters {pair!r}: a value is a finite number, true/false or text (got {text!r})"
            )
        values[name] = value
    return values


def parse_objective(text: str) -> dict[str, Any]:
    match = _OBJECTIVE.match(text)
    if not match:
        raise RunSpecError(f'--objective {text!r}: write METRIC>=TARGET or METRIC<=TARGET, e.g. "test:accuracy>=0.9"')
    try:
        target = float(match["target"])
    except ValueError:
        raise RunSpecError(f"--objective {text!r}: the target {match['target']!r} is not a number") from None
    if not math.isfinite(target):
        raise RunSpecError(f"--objective {text!r}: the target must be a finite number (got {match['target']})")
    return {
        "metric_name": match["metric"],
        "type": "Maximize" if match["op"] == ">=" else "Minimize",
        "target_value": target,
    }


def parse_channels(pairs: list[str]) -> dict[str, str]:
    channels = {}
    for pair in pairs:
        name, separator, directory = pair.partition("=")
        if not separator or not name or not directory:
            raise RunSpecError(f"--channel {pair!r}: write NAME=DIR, e.g. train=data/train")
        if name in channels:
            raise RunSpecError(f"--channel {pair!r}: channel {name!r} is given twice; give each channel once")
        channels[name] = str(Path(directory).expanduser().resolve())
    return channels


def apply_script_options(run_spec: dict[str, Any], arguments: argparse.Namespace) -> dict[str, Any]:
    """The run_spec with the command line's script options applied (paths made absolute: relative to cwd)."""
    merged = dict(run_spec)
    if arguments.source_dir is not None:
        merged["source_dir"] = str(Path(arguments.source_dir).expanduser().resolve())
    if arguments.entry_point is not None:
        merged["entry_point"] = arguments.entry_point
    if arguments.hyperparameters:
        given = merged.get("hyperparameters") or {}
        if not isinstance(given, dict):
            raise RunSpecError("hyperparameters: must be a JSON object of name: value")
        merged["hyperparameters"] = {**given, **parse_hyperparameters(arguments.hyperparameters)}
    if arguments.objective is not None:
        merged["objective"] = parse_objective(arguments.objective)
    if arguments.channel:
        given = merged.get("channels") or {}
        if not isinstance(given, dict):
            raise RunSpecError("channels: must be a JSON object of channel name: directory or s3:// prefix")
        merged["channels"] = {**given, **parse_channels(arguments.channel)}
    return merged


def uses_builtin_example(run_spec: dict[str, Any]) -> bool:
    return run_spec.get("source_dir") is None and run_spec.get("entry_point") is None
