"""``remediate``: the remediation workflow's command line.

remediate local run [...]     run the whole loop on this machine (no AWS account)
remediate cloud ...           deploy and drive it in an AWS account (see remediate.cloud_commands)
"""

from __future__ import annotations

import argparse
import sys

from remediate import cloud_commands, local_commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="remediate",
        description="Automated remediation of unstable deep-learning training: train -> monitor -> plan, relaunch.",
    )
    groups = parser.add_subparsers(dest="group", metavar="{local,cloud}", required=True)
    local_commands.register(groups)
    cloud_commands.register(groups)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    handler = getattr(arguments, "handler", None)
    if handler is None:
        parser.parse_args([*(argv if argv is not None else sys.argv[1:]), "--help"])
        return 2
    return int(handler(arguments) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
