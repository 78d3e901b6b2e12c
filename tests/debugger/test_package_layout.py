"""The debugger's sub-packages and the one direction of their imports, read from the source with ``ast``.

    core  <-  storage  <-  trial  <-  rules  <-  hook  <-  loss_patches  <-  debugger.launcher

A module imports its own sub-package and those to its left, never one to its right; every import counts (at the top
of a module, inside a function, under ``if TYPE_CHECKING:``), and so does a name in ``importlib.import_module``'s
or ``sys.modules``' string. Between modules, imports that run (all but ``TYPE_CHECKING``'s) form no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DEBUGGER = Path(__file__).resolve().parents[2] / "debugger"

#: Lowest first. A module of a layer may import modules of its own layer and of the layers before it.
LAYERS = ("core", "storage", "trial", "rules", "hook", "loss_patches")
#: What sits above every sub-package: the package's lazy facade and the job launcher (SageMaker's entry point).
TOP = {"debugger", "debugger.launcher"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(DEBUGGER.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(DEBUGGER.rglob("*.py"))}


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (never run)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                guarded.update(id(child) for child in ast.walk(inner))
    return guarded


def _resolve(module: str, level: int, importer: str, is_package: bool) -> str:
    if not level:
        return module
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - level + 1]
    return ".".join([*base, module] if module else base)


def imports_of(name: str) -> list[tuple[str, bool]]:
    """(imported debugger module, whether the import runs) for every import in module ``name``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    guarded = _type_checking_blocks(tree)
    found: list[tuple[str, bool]] = []

    def add(target: str, node: ast.AST) -> None:
        while target and target not in MODULES:  # a name imported from a module: the module
            target = target.rpartition(".")[0]
        if target and target != name:
            found.append((target, id(node) not in guarded))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "debugger":
                    add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module or "", node.level, name, path.name == "__init__.py")
            if base.split(".")[0] == "debugger":
                for alias in node.names:
                    add(f"{base}.{alias.name}", node)
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith(("import_module", "sys.modules.get")):
            # importlib.import_module("debugger.x"), sys.modules.get("debugger.x"): an import by name
            for argument in node.args[:1]:
                if isinstance(argument, ast.Constant) and str(argument.value).split(".")[0] == "debugger":
                    add(argument.value, node)
    return found


def layer(name: str) -> int:
    if name in TOP:
        return len(LAYERS)
    return LAYERS.index(name.split(".")[1])


def test_every_module_is_in_a_sub_package_or_at_the_top():
    loose = [name for name in MODULES if name not in TOP and name.split(".")[1] not in LAYERS]
    assert not loose, f"modules outside the sub-packages {LAYERS}: {loose}"
    assert {name.split(".")[1] for name in MODULES if name not in TOP} == set(LAYERS)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_a_higher_layer(name):
    upward = [target for target, _ in imports_of(name) if layer(target) > layer(name)]
    assert not upward, (
        f"{name} (layer {layer(name)}: {(*LAYERS, 'top')[layer(name)]}) imports {upward} from a higher layer; "
        f"the order is {' <- '.join(LAYERS)} <- top: move the shared piece down instead"
    )


def _runtime_graph() -> dict[str, set[str]]:
    return {name: {target for target, runs in imports_of(name) if runs} for name in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_modules():
    assert _cycles(_runtime_graph()) == []


def test_no_import_cycle_between_sub_packages():
    package_graph: dict[str, set[str]] = {}
    for name, targets in _runtime_graph().items():
        package = name if name in TOP else ".".join(name.split(".")[:2])
        package_graph.setdefault(package, set()).update(
            target if target in TOP else ".".join(target.split(".")[:2]) for target in targets
        )
    for package, targets in package_graph.items():
        targets.discard(package)
    assert _cycles(package_graph) == []


def test_the_checks_see_an_upward_import_and_a_cycle(tmp_path):
    """The graph is read from real source: the two circles this layout broke would be found."""
    circle = {"debugger.rules.rule": {"debugger.rules.registry"}, "debugger.rules.registry": {"debugger.rules.rule"}}
    assert _cycles(circle) == [["debugger.rules.registry", "debugger.rules.rule"]]
    # stall_watchdog used to import the launcher's FailureFile: the hook layer reaching above itself.
    assert layer("debugger.launcher") > layer("debugger.hook.stall_watchdog")
    # Each layer's modules are really read: the hook imports the rules, the rules the trial, the trial storage.
    assert ("debugger.rules.registry", True) in imports_of("debugger.hook.hook_base")
    assert ("debugger.trial.trial", True) in imports_of("debugger.rules.rule")
    assert ("debugger.storage.layout", True) in imports_of("debugger.trial.trial")
    # ... including imports inside a function and names in strings.
    assert ("debugger.hook.hook_base", True) in imports_of("debugger.launcher")
