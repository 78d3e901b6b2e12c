"""`remediate ... --help` says each option's whole sentence: no help text is cut off mid-sentence."""

from __future__ import annotations

import argparse
import re

import pytest

from remediate.main import build_parser, main

#: Words a sentence does not end on: a help text ending on one was cut off ("each subdirectory of DIR is one").
DANGLING = {"a", "an", "and", "as", "by", "each", "for", "from", "in", "is", "of", "on", "one", "or", "the", "to", "with"}


def parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:  # argparse keeps its subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from parsers(child, (*path, name))


def test_the_data_option_says_what_a_subdirectory_is(capsys):
    with pytest.raises(SystemExit) as leaving:
        main(["local", "run", "--help"])
    assert leaving.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "--data DIR channels to train on: each subdirectory of DIR is one channel, named after it (SM_CHANNEL_<NAME>); "
        "the built-in example reads train/ and test/, each with x.npy and y.npy"
    ) in text


def test_no_help_text_ends_mid_sentence():
    cut = []
    for path, parser in parsers(build_parser()):
        for action in parser._actions:
            if action.help and action.help is not argparse.SUPPRESS:
                words = re.findall(r"[A-Za-z]+", action.help.rstrip(" .)"))
                if words and words[-1].lower() in DANGLING:
                    cut.append(f"remediate {' '.join(path)} {'/'.join(action.option_strings) or action.dest}: {action.help!r}")
    assert cut == []
