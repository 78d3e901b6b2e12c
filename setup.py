"""Build hook: the wheel carries the state machine definition and the built-in example's source (its entry point
and the model package it imports: not Python packages of the wheel's own) under local_runtime/_shipped/, where local_runtime.shipped finds them. Everything
else about the package is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: checkout path -> path inside the built package
SHIPPED = {
    "statemachine": "local_runtime/_shipped/statemachine",
    "examples/resnet": "local_runtime/_shipped/examples/resnet",
    "model": "local_runtime/_shipped/model",
}


class BuildWithShippedFiles(build_py):
    def run(self):
        super().run()
        root = Path(__file__).resolve().parent
        for source, target in SHIPPED.items():
            destination = Path(self.build_lib) / target
            shutil.rmtree(destination, ignore_errors=True)
            shutil.copytree(root / source, destination, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithShippedFiles})
