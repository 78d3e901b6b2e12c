#!/usr/bin/env python3
"""CDK entry point (cdk.json runs it): the training remediation stack, checked by cdk-nag on every synth."""

from infra.app import build_app

if __name__ == "__main__":
    app, _ = build_app()
    app.synth()
