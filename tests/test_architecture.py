"""The package's shape: imports flow one way (no cycle), layers stay apart, modules stay small."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "oarepo_oaipmh_harvester"
ROOT = PACKAGE.name
MAX_LINES = 450


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for path in PACKAGE.rglob("*.py")
        # Migrations are no modules of the package; a name with "-" is no importable module
        # (asked of the path inside the package: the checkout's own folder may have one).
        if "alembic" not in path.relative_to(PACKAGE).parts
        and "-" not in path.relative_to(PACKAGE).as_posix()
    }


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Package modules `name` imports anywhere: function-level imports and imports made for
    typing too (a module that needs another's types for its own is tied to it as well)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            targets = [prefix, *(f"{prefix}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return components


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, known) for name, path in modules.items()}
    # A package's __init__ importing its own submodules is not a cycle of the design.
    for name in graph:
        graph[name] = {t for t in graph[name] if not (t.startswith(name + ".") and name in modules)}
    return graph


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_engine_knows_nothing_of_surfaces() -> None:
    surfaces = (f"{ROOT}.resources", f"{ROOT}.administration", f"{ROOT}.cli", f"{ROOT}.tasks")
    graph = _graph()
    leaks = {
        module: sorted(t for t in targets if t.startswith(surfaces))
        for module, targets in graph.items()
        if module.startswith(f"{ROOT}.harvest")
    }
    assert {module: targets for module, targets in leaks.items() if targets} == {}


def test_protocol_layer_imports_no_other_part_of_the_package() -> None:
    graph = _graph()
    outside = {
        module: sorted(t for t in targets if not t.startswith(f"{ROOT}.protocol") and t != ROOT)
        for module, targets in graph.items()
        if module.startswith(f"{ROOT}.protocol")
    }
    assert {module: targets for module, targets in outside.items() if targets} == {}


def test_transformers_import_nothing_of_the_engine() -> None:
    """Crosswalks are no part of the engine: the engine asks the registry for a transformer
    and calls it; a transformer needs the record type of the protocol layer at most."""
    graph = _graph()
    transformers = {module for module in graph if module.startswith(f"{ROOT}.transformers")}
    assert f"{ROOT}.transformers.rdm.datacite" in transformers  # the check sees the package
    outside = {
        module: sorted(
            target
            for target in graph[module]
            if not target.startswith((f"{ROOT}.transformers", f"{ROOT}.protocol"))
        )
        for module in transformers
    }
    assert {module: targets for module, targets in outside.items() if targets} == {}


def test_no_long_modules() -> None:
    """No module over MAX_LINES lines, whatever its docstring says; only the test support
    (``testing/``: the bundled provider and its corpus) is exempt."""
    long_modules = [
        f"{name} ({lines} lines)"
        for name, path in _modules().items()
        if not name.startswith(f"{ROOT}.testing")
        for lines in [path.read_text().count("\n")]
        if lines > MAX_LINES
    ]
    assert long_modules == []
