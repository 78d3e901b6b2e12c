"""Synthesizes the real stack through the Python API (no CDK CLI, no network) for the tests in tests/cdk."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the Makefile exports, so a bare `pytest tests/cdk` behaves the same.
for _name, _value in {
    "CDK_DISABLE_CLI_TELEMETRY": "1",
    "CDK_DISABLE_VERSION_CHECK": "1",
    "CDK_VALIDATION": "false",
}.items():
    os.environ.setdefault(_name, _value)
#: The Node.js package.json pins (npm ci): the Makefile puts it first on PATH; jsii takes it from JSII_NODE.
PINNED_NODE = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "node"
if PINNED_NODE.exists():
    os.environ.setdefault("JSII_NODE", str(PINNED_NODE))

from aws_cdk.assertions import Template  # noqa: E402

from infra.app import build_app  # noqa: E402
from infra.stack import TrainingRemediationStack  # noqa: E402
from infra.workflow import DEFAULT_DEFINITION_PATH  # noqa: E402


@dataclass
class Synthesized:
    stack: TrainingRemediationStack
    outdir: Path
    template: dict[str, Any]
    assertions: Template
    synth_seconds: float
    definition_path: Path

    @property
    def template_path(self) -> Path:
        return self.outdir / f"{self.stack.stack_name}.template.json"

    def resources(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == resource_type}

    def logical_id(self, construct) -> str:
        return self.stack.resolve(construct.node.default_child.logical_id)


def synthesize(outdir: Path, **context: Any) -> Synthesized:
    definition_path = Path(context.get("state_machine_definition", DEFAULT_DEFINITION_PATH))
    started = time.perf_counter()
    app, stack = build_app(context, outdir=str(outdir))
    app.synth()
    seconds = time.perf_counter() - started
    template = json.loads((outdir / f"{stack.stack_name}.template.json").read_text())
    return Synthesized(stack, outdir, template, Template.from_json(template), seconds, definition_path)


def acknowledgements(synthesized: Synthesized) -> dict[str, dict[str, str]]:
    """{construct path: {rule id: reason}} for every cdk-nag acknowledgement in the stack."""
    from aws_cdk import Validations

    found: dict[str, dict[str, str]] = {}
    for construct in synthesized.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found.setdefault(construct.node.path, {}).update(entry.data)
    return found
