"""Task wiring declared once: the keys of a task YAML that restate a fact owned elsewhere are written, never typed.

Three keys of every task YAML (probe and official alike, tasks/ and the opt-in full-size tasks) copy
a fact that has its own owner:

- ``tag:`` — the task's groups and capabilities, from the taxonomy (taxonomy/captrack.yaml); an opt-in
  full-size task has none, so that no tag selects it;
- ``higher_is_better:`` of each ``metric_list`` entry — the metric's direction, from its MetricSpec
  (captrack/metrics/catalog.py): true exactly when the direction is ``higher``;
- ``metadata.version:`` of a probe task — its generator's version (``@generator(NAME, version=...)``),
  the generator being the one the folder's ``utils.py`` passes to ``to_dataset``. An official task's
  version has no other owner: its YAML declares it (with a changelog line in the folder's README).
- ``metadata.note:`` of a probe task — how many items stock lm-eval evaluates: what the generator makes from
  the YAML's own ``metadata.seed`` and ``metadata.n`` (16 to 96 for most probes), which ``--limit`` never
  raises. lm-eval copies the task's metadata into the results' ``configs``, so the note is in every results
  file; the generator ignores it.

`captrack tasks --write` rewrites these keys in place (adding any that are missing, leaving every other
line as written); tests/test_tasks.py fails while a committed YAML differs from what it would write. A
new task is written without them, or with any value, and `captrack tasks --write` fills them in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from captrack.errors import InputError

__all__ = ["Wiring", "probe_generator", "task_yamls", "wire", "wiring_of", "write_tasks"]

_TOP_KEY = re.compile(r"^[A-Za-z_][\w-]*:")
_TO_DATASET = re.compile(r"""\bto_dataset\(\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class Wiring:
    """The wired values of one task: its tags (empty: no tag line), each metric's higher_is_better, its version
    (None: the YAML's own) and, for a probe, its note on the items stock lm-eval runs (None: not a probe)."""

    tags: tuple[str, ...]
    higher_is_better: dict[str, bool]
    version: float | None
    note: str | None = None


def task_yamls() -> list[Path]:
    """Every task YAML captrack ships: tasks/*/*.yaml and the opt-in full-size tasks."""
    from captrack.paths import full_tasks_dir, tasks_dir

    return sorted([*Path(tasks_dir()).glob("*/*.yaml"), *Path(full_tasks_dir()).glob("*/*.yaml")])


def probe_generator(folder: Path) -> str | None:
    """The probe generator a task folder's ``utils.py`` loads its items from (None: not a probe task)."""
    hooks = folder / "utils.py"
    found = _TO_DATASET.search(hooks.read_text(encoding="utf-8")) if hooks.is_file() else None
    return found.group(1) if found else None


def _task_name(path: Path, text: str) -> str:
    for line in text.splitlines():
        if line.startswith("task:"):
            return line.split(":", 1)[1].strip()
    raise InputError(f"{path}: no 'task:' line; every task YAML names its task")


def _metrics(text: str) -> list[str]:
    return re.findall(r"^\s*- metric:\s*(\S+)\s*$", text, re.M)


def wiring_of(path: Path, text: str | None = None) -> Wiring:
    """What the owners of a task's wired keys say (taxonomy, MetricSpec, probe generator).

    Raises:
        UnknownNameError: the task is in no taxonomy member, a metric has no MetricSpec, or the generator is unknown.
    """
    from captrack.metrics.registry import get_metric
    from captrack.paths import full_tasks_dir
    from captrack.probes import probe
    from captrack.taxonomy import load_taxonomy

    text = path.read_text(encoding="utf-8") if text is None else text
    task = _task_name(path, text)
    directions = {name: get_metric(name).direction == "higher" for name in _metrics(text)}
    generator = probe_generator(path.parent)
    version = probe(generator).version if generator is not None else None
    opt_in = path.resolve().is_relative_to(Path(full_tasks_dir()).resolve())
    return Wiring(() if opt_in else tuple(load_taxonomy().tags_for(task)), directions, version,
                  _items_note(generator, text) if generator is not None else None)


def _items_note(generator: str, text: str) -> str:
    """The note on the items stock lm-eval evaluates: as many as `generator` makes from the YAML's metadata.seed and
    metadata.n (the generator's default count without n)."""
    from captrack.probes import generate

    span = _blocks(text.splitlines(), "metadata")
    body = "\n".join(text.splitlines()[span[0] + 1:span[1]]) if span is not None else ""
    seed, n = (re.search(rf"^\s+{key}:\s*(\d+)\s*$", body, re.M) for key in ("seed", "n"))
    items = len(generate(generator, int(seed.group(1)) if seed else 1234, int(n.group(1)) if n else None))
    where = "metadata.n" if n else "the generator's default; metadata.n sets it"
    return f"{items} generated items by default ({where}); --limit never adds items; --metadata n=N asks the generator for N"


def _blocks(lines: list[str], key: str) -> tuple[int, int] | None:
    """The line span of top-level block `key` (its header line to the next top-level key), or None."""
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{key}:")), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if _TOP_KEY.match(lines[i])), len(lines))
    return start, end


def _set_tags(lines: list[str], tags: tuple[str, ...]) -> list[str]:
    line = [f"tag: [{', '.join(tags)}]"] if tags else []
    found = _blocks(lines, "tag")
    if found is not None:
        return [*lines[:found[0]], *line, *lines[found[1]:]]
    task = next(i for i, text in enumerate(lines) if text.startswith("task:"))
    return [*lines[:task + 1], *line, *lines[task + 1:]]


def _set_directions(lines: list[str], directions: dict[str, bool]) -> list[str]:
    span = _blocks(lines, "metric_list")
    if span is None:
        return lines
    out, entry, metric = list(lines[:span[0] + 1]), list[str](), ""

    def flush() -> None:
        if not entry:
            return
        value = "true" if directions[metric] else "false"
        indent = re.match(r"^(\s*)-", entry[0]).group(1) + "  "  # type: ignore[union-attr]
        kept = [line for line in entry if not line.strip().startswith("higher_is_better:")]
        where = next((i + 1 for i, line in enumerate(kept) if line.strip().startswith("aggregation:")), len(kept))
        out.extend([*kept[:where], f"{indent}higher_is_better: {value}", *kept[where:]])
        entry.clear()

    for line in lines[span[0] + 1:span[1]]:
        started = re.match(r"^\s*- metric:\s*(\S+)", line)
        if started:
            flush()
            metric = started.group(1)
        if started or entry:
            entry.append(line)
        else:
            out.append(line)
    flush()
    return [*out, *lines[span[1]:]]


def _set_version(lines: list[str], version: float) -> list[str]:
    span = _blocks(lines, "metadata")
    line = f"  version: {version!r}"
    if span is None:
        return [*lines, "metadata:", line]
    body = [text for text in lines[span[0] + 1:span[1]] if not re.match(r"^\s+version:", text)]
    return [*lines[:span[0] + 1], line, *body, *lines[span[1]:]]


def _set_note(lines: list[str], note: str) -> list[str]:
    """``metadata.note:`` set to `note` (after the version line)."""
    line = '  note: "' + note.replace("\\", "\\\\").replace('"', '\\"') + '"'
    span = _blocks(lines, "metadata")
    if span is None:
        return [*lines, "metadata:", line]
    body = [text for text in lines[span[0] + 1:span[1]] if not re.match(r"^\s+note:", text)]
    at = next((i + 1 for i, text in enumerate(body) if re.match(r"^\s+version:", text)), 0)
    return [*lines[:span[0] + 1], *body[:at], line, *body[at:], *lines[span[1]:]]


def wire(path: Path, text: str | None = None) -> str:
    """The text of the task YAML at `path` with its wired keys set from their owners (other lines as written)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    wiring = wiring_of(path, text)
    lines = _set_directions(_set_tags(text.splitlines(), wiring.tags), wiring.higher_is_better)
    if wiring.version is not None:
        lines = _set_version(lines, wiring.version)
    if wiring.note is not None:
        lines = _set_note(lines, wiring.note)
    return "\n".join(lines) + "\n"


def write_tasks(paths: list[Path] | None = None, check: bool = False) -> list[Path]:
    """Rewrite the wired keys of every task YAML (or only report them, with `check`); returns the files that differed."""
    from captrack.files import write_atomic

    changed = []
    for path in task_yamls() if paths is None else paths:
        text = path.read_text(encoding="utf-8")
        wired = wire(path, text)
        if wired != text:
            changed.append(path)
            if not check:
                write_atomic(path, wired)
    return changed
