"""Command-line values checked where argparse reads them: each bad one is one line naming the option, what was
given and what is allowed (exit code 2), before anything starts.

    run.add_argument("--train-samples", type=whole_number(1, 200_000))
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn


def whole_number(low: int, high: int, why_high: str = "") -> Callable[[str], int]:
    """A whole number in [low, high]; ``why_high`` says why the ceiling is where it is."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high} (got {text!r})") from None
        if not low <= value <= high:
            reason = f" ({why_high})" if why_high and value > high else ""
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}{reason} (got {value})")
        return value

    return parse


def seconds(low: float, high: float, *, low_inclusive: bool = True) -> Callable[[str], float]:
    """A finite number of seconds in [low, high] (or (low, high])."""
    lower = f"{'at least' if low_inclusive else 'more than'} {low:g}"

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number of seconds, {lower} and at most {high:g} (got {text!r})") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number of seconds (got {text})")
        if value < low or (value == low and not low_inclusive) or value > high:
            raise argparse.ArgumentTypeError(f"must be {lower} and at most {high:g} seconds (got {value:g})")
        return value

    return parse


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse's errors as one line a script can grep ("remediate local run: error: argument ...: ..."), with
    where to find the usage; exit code 2, as argparse has it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see: {self.prog} --help)\n")


def exit_with_help(parser: argparse.ArgumentParser) -> NoReturn:
    parser.print_help(sys.stdout)
    parser.exit(0)
