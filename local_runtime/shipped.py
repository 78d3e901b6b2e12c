"""Files the installed package carries besides its modules: the state machine definition and the built-in
example's source: its entry point and the model package it trains. In a checkout they are where they always were
(``statemachine/``, ``examples/resnet/``, ``model/``);
an installed ``remediate`` finds the copies ``setup.py`` puts under ``local_runtime/_shipped/`` at build
time, so ``pip install .`` gives a working CLI with no checkout around it."""

from __future__ import annotations

from pathlib import Path

#: Where the build puts the copies (setup.py's SHIPPED maps checkout paths to these).
SHIPPED_DIR = Path(__file__).resolve().parent / "_shipped"
#: The checkout's root (in an installed package: site-packages, where these paths do not exist).
CHECKOUT_ROOT = Path(__file__).resolve().parent.parent


def shipped_path(relative: str) -> Path:
    """The installed copy of ``relative`` (a checkout path such as "examples/resnet") if the package carries
    one, else the checkout's own."""
    installed = SHIPPED_DIR / relative
    return installed if installed.exists() else CHECKOUT_ROOT / relative


ASL_PATH = shipped_path("statemachine/remediation.asl.json")
BUILTIN_EXAMPLE_DIR = shipped_path("examples/resnet")
#: The ResNet the built-in example trains (its builder, data, hyperparameters and job), which its entry point imports.
BUILTIN_MODEL_DIR = shipped_path("model")
