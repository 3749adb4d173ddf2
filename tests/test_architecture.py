"""The package's structure rules (README's Layout): import direction, where SQL lives, module and function size."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "captrack"
# Sub-package -> sub-packages it must never import (imports point one way: report -> analysis -> results).
FORBIDDEN = {
    "results": ("analysis", "report", "pipeline", "training", "lmeval"),
    "analysis": ("report", "pipeline", "training", "lmeval"),
    "report": ("pipeline", "training"),
    "metrics": ("results", "analysis", "report", "pipeline", "training"),
}


def _modules(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_one_way(package: str) -> None:
    bad = [f"{path.relative_to(PACKAGE)} imports {name}" for path in _modules(package) for name in _imports(path)
           if any(name == f"captrack.{other}" or name.startswith(f"captrack.{other}.") for other in FORBIDDEN[package])]
    assert not bad, bad


@pytest.mark.parametrize("package", ["analysis", "report"])
def test_only_results_talks_sql_or_knows_lmeval_file_names(package: str) -> None:
    pattern = re.compile(r"\.con\b|execute\(|samples_\{|results_\*|import duckdb|duckdb\.")
    bad = [f"{path.relative_to(PACKAGE)}:{n}" for path in _modules(package)
           for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert not bad, bad


def test_pairing_is_written_once() -> None:
    """Only captrack.results.pairing joins base and variant sample rows."""
    joins = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "FULL OUTER JOIN" in p.read_text()]
    assert joins == ["results/pairing.py"]


def test_modules_and_functions_stay_small() -> None:
    too_long = []
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text()
        if len(source.splitlines()) > 400:
            too_long.append(f"{path.relative_to(PACKAGE)}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > 60:
                    too_long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, too_long


def test_the_package_ships_type_information() -> None:
    assert (PACKAGE / "py.typed").is_file()
