"""``remediate``: the remediation workflow's command line.

remediate local run [...]     run the whole loop on this machine (no AWS account)
remediate cloud ...           deploy and drive it in an AWS account (see remediate.cloud_commands)
remediate --version

With no command (or a group without its command) it prints the help.
"""

from __future__ import annotations

import argparse
from importlib import metadata

from remediate import cloud_commands, local_commands
from remediate.cli_values import OneLineErrorParser, exit_with_help

DISTRIBUTION = "training-remediation"


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="remediate",
        description="Automated remediation of unstable deep-learning training: train -> monitor -> plan, relaunch.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    groups = parser.add_subparsers(dest="group", metavar="{local,cloud}")
    local_commands.register(groups)
    cloud_commands.register(groups)
    parser.set_defaults(help_parser=parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    handler = getattr(arguments, "handler", None)
    if handler is None:  # `remediate`, `remediate local`, `remediate cloud`: what can follow, not an error
        exit_with_help(arguments.help_parser)
    return int(handler(arguments) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
