"""The package's structure rules (docs/contributing/layout.md): import direction, where SQL and lm-eval's file names live,
who spells the work folder's layout, module and function size."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "captrack"
# Every sub-package and top-level module of captrack, floor first: a module imports only from layers below its
# own (never beside it, never above). The one exception is outside the package: captrack_lmeval_hook.py, which
# lm-eval's interpreter loads at start-up, imports HOOK_IMPORTS. A new sub-package fails the test until it is placed.
LAYERS = (
    ("__init__", "errors", "labels", "lazy", "processes", "output_names"),  # the ground floor: imports nothing of ours
    ("bounded", "paths", "registries", "schemas", "failures"),
    ("files",),
    ("models", "theory", "metrics"),  # metrics: scorers, handed the task's scorers, never reaching up for them
    ("taxonomy", "official", "probes", "backends"),
    ("results",),  # the store and the run files
    ("analysis",),  # statistics on data handed in
    ("report",),  # renders what analysis computed
    ("compare", "judges", "lmeval", "gate", "cli_parser"),
    ("imports", "training"),
    ("pipeline",),  # `captrack run`: every stage, every executor
    ("cli",),
)
HOOK_IMPORTS = {"captrack.paths", "captrack.lmeval", "captrack.lmeval.quiet"}
# The comparison reads the results layer once (captrack.compare); analysis and report get data, and
# take only these types from captrack.results, never the Store or a reader.
RESULT_TYPES = {"PairedItems", "ItemText", "PAIRED_COLUMNS"}


def _imported_names(path: Path) -> set[tuple[str, str]]:
    return {(node.module, alias.name) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}


@pytest.mark.parametrize("package", ["analysis", "report"])
def test_analysis_and_report_never_read_the_store(package: str) -> None:
    bad = [f"{path.relative_to(PACKAGE)} imports {module}.{name}" for path in _modules(package)
           for module, name in _imported_names(path)
           if (module == "captrack.results" or module.startswith("captrack.results.")) and name not in RESULT_TYPES]
    assert not bad, bad


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


def _layer_of() -> dict[str, int]:
    return {name: level for level, names in enumerate(LAYERS) for name in names}


def _node(path: Path) -> str:
    """The layering node of a module: its sub-package, or its own name at the top level."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def test_every_sub_package_and_module_has_a_layer() -> None:
    nodes = {_node(path) for path in PACKAGE.rglob("*.py")}
    assert nodes - set(_layer_of()) == set(), "place it in LAYERS"
    assert set(_layer_of()) - nodes == set(), "LAYERS names a module that is gone"


def test_imports_point_down_the_layers() -> None:
    layer = _layer_of()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _node(path)
        for name in _imports(path):
            if name == "captrack" or not name.startswith("captrack."):
                continue
            target = name.split(".")[1]
            if target != own and layer.get(target, -1) >= layer[own]:
                bad.append(f"{path.relative_to(PACKAGE)} ({own}, layer {layer[own]}) imports {name} (layer {layer.get(target)})")
    assert not bad, bad


def test_only_the_start_up_hook_imports_from_outside_the_layers() -> None:
    hook = PACKAGE.parent / "captrack_lmeval_hook.py"
    assert {n for n in _imports(hook) if n.startswith("captrack.")} == HOOK_IMPORTS


# lm-eval's file names as code writes them: "results_*.json", f"samples_{task}_...", "results_" + date.
LMEVAL_FILE_NAME = re.compile(r"(results|samples)_(\*|\{\}|$)")
SQL_MODULES = ("duckdb", "sqlite3")
# The one module outside captrack/results allowed SQL: the judges' own SQLite cache of replies.
SQL_ALLOWED = {"judges/cache.py"}


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals that are not docstrings (an f-string's values shown as ``{}``)."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found, inside = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(value) for value in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            found.append((node.lineno, text))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings | inside:
            found.append((node.lineno, node.value))
    return found


def _sql(tree: ast.AST) -> list[int]:
    """Lines that import or use a database module, call ``.execute(`` or reach for a store's connection (``.con``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] in SQL_MODULES for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in SQL_MODULES:
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in SQL_MODULES:
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "execute":
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "con":
            lines.append(node.lineno)
    return lines


def test_only_results_talks_sql_or_knows_lmeval_file_names() -> None:
    """Every module outside captrack/results: no lm-eval file names, no SQL (the judges' cache excepted)."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.startswith("results/"):
            continue
        tree = ast.parse(path.read_text())
        bad += [f"{where}:{n} names {text!r}" for n, text in _strings(tree) if LMEVAL_FILE_NAME.search(text)]
        if where not in SQL_ALLOWED:
            bad += [f"{where}:{n} talks SQL" for n in _sql(tree)]
    assert not bad, bad


def test_the_rules_see_what_they_look_for() -> None:
    tree = ast.parse('"""results_*.json"""\nimport duckdb\nx = f"samples_{t}_{d}.jsonl"\ny = "results_" + d\nstore.con.execute("q")\n')
    assert [n for n, text in _strings(tree) if LMEVAL_FILE_NAME.search(text)] == [3, 4]
    assert sorted(set(_sql(tree))) == [2, 5]
    assert SQL_ALLOWED <= {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}


# The work folder's layout is spelled in captrack/pipeline/layout.py only (WorkFolder): its file names anywhere,
# its folder names as a path component (``x / "runs"``). Other folders with their own layout are named here.
LAYOUT_MODULE = "pipeline/layout.py"
LAYOUT_FILE_NAME = re.compile(r"store(\.tmp)?\.duckdb|\.captrack-run\.lock|\.experiment\.pickle|^seed\{\}$")
LAYOUT_FOLDERS = {"runs", "models", "cache", "data", "markers", "logs"}
OTHER_LAYOUTS = {
    "models.py": {"models"},  # the model cache, ~/.cache/captrack/models
    "official/cli.py": {"data"},  # the default data mirror, ~/.cache/captrack/data
    "official/mirror.py": {"data"},  # a mirror's own layout, <mirror>/data/<config>
    "official/hub.py": {"data"},  # the hub dataset's layout
}


def _path_components(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals joined onto a path with ``/``."""
    return [(node.lineno, node.right.value) for node in ast.walk(tree)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant) and isinstance(node.right.value, str)]


def test_only_the_work_folder_layout_spells_its_names() -> None:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where == LAYOUT_MODULE:
            continue
        tree = ast.parse(path.read_text())
        bad += [f"{where}:{n} names {text!r}" for n, text in _strings(tree) if LAYOUT_FILE_NAME.search(text)]
        allowed = OTHER_LAYOUTS.get(where, set())
        bad += [f"{where}:{n} joins {text!r}" for n, text in _path_components(tree)
                if text in LAYOUT_FOLDERS - allowed]
    assert not bad, bad


def test_the_layout_rule_sees_what_it_looks_for() -> None:
    tree = ast.parse('"""store.duckdb"""\na = w / "store.duckdb"\nb = w / "runs" / n / f"seed{s}"\nc = f"(seed {s})"\n')
    assert [n for n, text in _strings(tree) if LAYOUT_FILE_NAME.search(text)] == [2, 3]
    assert sorted(_path_components(tree)) == [(2, "store.duckdb"), (3, "runs")]
    layout = (PACKAGE / LAYOUT_MODULE).read_text()
    assert all(f'"{name}"' in layout for name in LAYOUT_FOLDERS)
    assert set(OTHER_LAYOUTS) <= {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}


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


def test_report_renders_and_calls_no_function_of_analysis() -> None:
    """report/ takes types and constants from analysis/, never a function: what a page shows is computed before
    (the comparison, captrack.analysis.board_summary) and only drawn here (issue 41)."""
    import importlib
    import inspect

    bad = []
    for path in _modules("report"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(a.name.startswith("captrack.analysis") for a in node.names):
                bad.append(f"{path.relative_to(PACKAGE)} imports a module of analysis")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("captrack.analysis"):
                module = importlib.import_module(str(node.module))
                for alias in node.names:
                    value = getattr(module, alias.name, None)
                    if inspect.ismodule(value) or (callable(value) and not inspect.isclass(value)):
                        bad.append(f"{path.relative_to(PACKAGE)} imports {node.module}.{alias.name}")
    assert not bad, bad
