"""One synth of the real stack per test session (tests/cdk)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from cdk_synth import Synthesized


def pytest_ignore_collect(collection_path, config):
    """Every test module here is marked cdk (pytestmark): a run whose -m leaves cdk out (make test-fast) does not
    import them, and so not the CDK through jsii (1.6 s and a Node.js process in every test process)."""
    if collection_path.name.startswith("test_") and collection_path.suffix == ".py" and _cdk_left_out(config):
        return True
    return None


def _cdk_left_out(config) -> bool:
    from _pytest.mark.expression import Expression

    expression = config.getoption("markexpr", "")
    if not expression:
        return False
    compiled = Expression.compile(expression)
    # left out whatever other marks a test has: with none of them, and with all of them
    return not any(
        compiled.evaluate(lambda name, /, others=others, **_: name == "cdk" or others) for others in (False, True)
    )


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory) -> Synthesized:
    from cdk_synth import synthesize

    return synthesize(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def variant_synthesized(tmp_path_factory) -> Synthesized:
    """The stack with every optional part: SageMaker Debugger's legacy grants and the AWS Budgets alarm (one synth
    for both: each synth bundles the Lambdas again)."""
    from cdk_synth import synthesize

    return synthesize(tmp_path_factory.mktemp("cdk.out.variant"), legacy_sagemaker_debugger="true", budget_limit_usd="500")
