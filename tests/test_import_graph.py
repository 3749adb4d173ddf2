"""No import circles inside captrack/: every import of a captrack module counts (top level, inside functions,
under ``if TYPE_CHECKING:``), relative imports resolved; ``from captrack.x import y`` is an edge to captrack.x
and, when captrack/x/y.py exists, to captrack.x.y. Importing captrack.a.b also runs captrack/a/__init__.py,
but that implicit parent import is not an edge: only what a module's own source names."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "captrack"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _absolute(node: ast.ImportFrom, name: str, path: Path) -> str:
    if not node.level:
        return node.module or ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _edges(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, name, path)
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    return {target for target in targets if target in modules and target != name}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component with more than one module, as one closed walk through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(_walk(graph, set(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _walk(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest cycle through the component's smallest module (enough to name the circle)."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node] & component):
                if target == start:
                    extra = sorted(component - set(paths[node]))
                    return paths[node] + [start] + ([f"(also {', '.join(extra)})"] if extra else [])
                if target not in paths:
                    paths[target] = paths[node] + [target]
                    following.append(target)
        frontier = following
    return [start]


def test_the_graph_sees_lazy_and_relative_imports() -> None:
    graph = import_graph()
    assert "captrack.judges.base" in graph["captrack.judges"]  # under `if TYPE_CHECKING:` in a package __init__
    assert "captrack.models" in graph["captrack.judges.hf"]  # inside a function
    assert "captrack.lmeval" in graph["captrack.pipeline.runner"]  # `from captrack.lmeval import task_manager`
    assert len(graph) > 50


def test_relative_imports_resolve(tmp_path: Path) -> None:
    node = ast.parse("from ..b import c").body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _absolute(node, "captrack.a.m", Path("captrack/a/m.py")) == "captrack.b"
    assert _absolute(node, "captrack.a", Path("captrack/a/__init__.py")) == "captrack.b"


def test_cycles_are_named() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"]]


def test_no_import_circles() -> None:
    found = [" -> ".join(cycle) for cycle in cycles(import_graph())]
    assert not found, "import circles in captrack/:\n" + "\n".join(found)
