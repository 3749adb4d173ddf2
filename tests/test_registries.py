"""Every extension point is one captrack.registries.Registry: names registered once, helpful unknown-name errors,
registering modules found by a package scan (never a hand-kept list), loading without a circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from captrack.errors import CaptrackError, UnknownNameError
from captrack.registries import Registry, declared_names, registering_modules

PACKAGE = Path(__file__).parents[1] / "captrack"


def _registries() -> dict[str, Registry[object]]:
    from captrack.imports.formats import ADAPTERS
    from captrack.judges.base import BACKENDS
    from captrack.judges.catalog import INPUTS, JUDGED
    from captrack.metrics.instructions import CONSTRAINTS
    from captrack.metrics.registry import METRICS, SCORERS
    from captrack.official.sources import BUILDERS
    from captrack.probes import PROBES

    found = [METRICS, SCORERS, CONSTRAINTS, PROBES, ADAPTERS, BACKENDS, INPUTS, JUDGED, BUILDERS]
    return {r.kind: r for r in found}  # type: ignore[misc]


def test_a_registry_keeps_the_first_entry_and_lists_the_known_ones() -> None:
    things: Registry[int] = Registry("thing")
    things.add("apple", 1)
    things.register("pear", "plum")(2)
    with pytest.raises(CaptrackError, match="thing 'apple' is registered twice"):
        things.add("apple", 3)
    assert things.entries() == {"apple": 1, "pear": 2, "plum": 2}
    with pytest.raises(UnknownNameError, match="unknown thing 'appel'; did you mean 'apple'"):
        things.get("appel")
    with pytest.raises(UnknownNameError, match="known: apple, pear, plum"):
        things.get("zzz")


def test_every_kind_is_a_loaded_registry_that_refuses_a_second_registration() -> None:
    registries = _registries()
    assert len(registries) == 9
    for kind, registry in registries.items():
        assert len(registry) > 0, kind
        name = registry.names()[0]
        first = registry.get(name)
        with pytest.raises(CaptrackError, match=f"{kind} '{name}' is registered twice"):
            registry.add(name, first)
        assert registry.get(name) is first


def test_no_registry_is_a_plain_dict_or_a_hand_kept_module_list() -> None:
    """Outside captrack/registries.py and captrack/lazy.py, no module imports modules by a name it computes."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where in ("registries.py", "lazy.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module":
                bad.append(f"{where}:{node.lineno}")
    assert not bad, bad


@pytest.mark.parametrize("kind", ["metric", "scorer", "probe generator", "judge backend", "official builder", "import format"])
def test_the_scan_finds_every_registering_module_and_loads_each_alone(kind: str) -> None:
    """A module is found by its registering line; importing any one of them first, alone, works (no circle)."""
    registry = _registries()[kind]
    assert registry.scan is not None and registry.marker is not None
    modules = registering_modules(registry.scan, registry.marker)
    folder = PACKAGE / registry.scan.removeprefix("captrack.").replace(".", "/")
    by_text = sorted(f"{registry.scan}.{p.stem}" for p in folder.glob("*.py")
                     if any(line.startswith(registry.marker) for line in p.read_text().splitlines()))
    assert modules == by_text and modules
    for module in modules:
        code = f"import {module}; from captrack.metrics.registry import all_metrics, get_scorer; all_metrics(); get_scorer('style')"
        assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0, module


def test_a_lookup_loads_the_registering_modules_in_a_fresh_interpreter() -> None:
    code = ("from captrack.probes import PROBES; from captrack.judges.base import BACKENDS; "
            "from captrack.official.sources import BUILDERS; "
            "print(len(PROBES) > 10, sorted(BACKENDS), 'gsm8k.full' in BUILDERS or len(BUILDERS) > 10)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "['hf',", "'openai']", "True"]


def test_declared_names_are_read_from_the_source_without_importing() -> None:
    """What `captrack --help` lists (read from source) is what the registry holds once loaded."""
    from captrack.imports.cli import FORMATS
    from captrack.imports.formats import ADAPTERS
    from captrack.probes import PROBES

    declared = [name for p in sorted((PACKAGE / "probes").glob("*.py")) for name in declared_names(p, "generator")]
    assert sorted(declared) == sorted(PROBES.names())
    assert FORMATS == tuple(sorted(ADAPTERS.names())) == (
        "captrack", "every-eval-ever", "inspect", "jsonl", "lighteval", "mmlu-pro", "nemo")
