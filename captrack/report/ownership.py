"""Which files of an output folder are captrack's: the only ones a comparison or a board may replace or remove.

Every `captrack compare --out DIR`, `captrack leaderboard DIR` and `captrack run` board writes
``DIR/.captrack-manifest.json`` (:data:`MANIFEST`) listing, relative to DIR, the files it wrote
(``files``) and the files it read there but never writes (``inputs``: a hand-written leaderboard.yaml,
the experiment file of a board kept beside it, a scores CSV, the run's work folder). Before the next
write, :func:`claim_folder` looks at every entry under DIR: a file in the manifest (or, without a
manifest, one captrack recognisably wrote, see below) may be replaced or removed; an input is left
alone; anything else is the user's, and the write is refused before anything changes, naming the
first such file (sorted by path). Symbolic links are never captrack's (it writes none): a link named
like an output, or a ``tasks`` link to another folder, is refused too.

A folder written before manifests existed (the committed boards of a fresh checkout, an older
`compare --out`) has none, so its files are recognised by what only captrack writes there:

* a comparison folder: its ``summary.json`` lists every file the comparison wrote (``files``); those,
  and summary.json itself, are captrack's. No summary.json: nothing is.
* a board folder: it holds a ``leaderboard.yaml`` (a board is defined by one). Then the board's own
  tables (:data:`BOARD_TABLES`, ``by_<field>.csv``), its figures (``figures/*.png|svg``), a
  README.md holding the board's heatmap line, and HTML pages (index.html, steps.html,
  ``tasks/*.html``) carrying captrack's stylesheet are captrack's; so is a leaderboard.yaml whose
  first line is the header `captrack run` writes. The experiment that header names is an input.
  Anything else (a hand-written README.md, ``tasks/howto.html``, ``my_results.csv``) is not.

A board is written in place (its folder also holds inputs), so :func:`claim_folder` refuses any
foreign file; a comparison replaces its folder whole, so there an empty sub-folder is foreign too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from captrack.errors import InputError
from captrack.files import read_json_or_none, write_atomic

__all__ = ["BOARD_TABLES", "MANIFEST", "RUN_HEADER", "ForeignFilesError", "OutputFolder", "claim_folder", "write_manifest"]

MANIFEST = ".captrack-manifest.json"
RUN_HEADER = "# Written by `captrack run "
"""The first line of a leaderboard.yaml that `captrack run` wrote (captrack.pipeline.board)."""

BOARD_TABLES = frozenset({
    "transitions.csv", "drift.csv", "capabilities.csv", "checkpoints.csv", "algorithms.csv", "power.csv",
    "rankings.csv", "pairs.csv", "curves.csv", "curve_summary.csv", "curve_items.csv", "step_flips.csv", "floor.csv"})
"""The tables a board writes (captrack.report.leaderboard_pages), recognised in a board folder without a manifest."""

_PAGE_SIGNATURE = ":root { --fg:#1d2433;"  # the first rule of captrack.report.html.CSS, inlined in every page
_README_SIGNATURE = "](figures/heatmap.png)"  # the heatmap line of every board README (captrack.report.board_readme)

Kind = Literal["compare", "leaderboard"]


class ForeignFilesError(InputError):
    """An output folder holds files captrack did not write; nothing was written."""


@dataclass(frozen=True)
class OutputFolder:
    """An output folder checked by :func:`claim_folder`: what captrack wrote there before, and its inputs."""

    folder: Path
    owned: frozenset[str]
    """Relative paths of files captrack wrote (it may replace or remove them)."""
    inputs: frozenset[str]
    """Relative paths (files or folders) captrack reads there and never writes."""


def _rel(path: Path, folder: Path) -> str | None:
    """`path` relative to `folder` (POSIX), or None when it is not inside it."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(folder)).as_posix()
    except ValueError:
        return None


def _names(listed: object) -> set[str]:
    """The relative paths a manifest lists (anything else in the list, e.g. ``../x`` or an absolute path, is ignored)."""
    if not isinstance(listed, list):
        return set()
    return {f for f in listed if isinstance(f, str) and f and not f.startswith("/") and ".." not in f.split("/")}


def _entries(folder: Path, skip: frozenset[str]) -> Iterable[tuple[str, os.DirEntry[str]]]:
    """Every entry under `folder` (relative path, entry), sorted, symbolic links not followed, `skip` not entered."""
    stack = [""]
    while stack:
        prefix = stack.pop()
        with os.scandir(folder / prefix if prefix else folder) as it:
            found = sorted(it, key=lambda e: e.name)
        for entry in found:
            rel = f"{prefix}{entry.name}"
            if rel in skip:
                continue
            yield rel, entry
            if entry.is_dir(follow_symlinks=False):
                stack.append(rel + "/")


def _read_head(path: Path, limit: int = 1 << 16) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _legacy_compare(folder: Path) -> set[str]:
    """Files of a comparison written before manifests: those its summary.json lists."""
    summary = read_json_or_none(folder / "summary.json")
    files = summary.get("files") if isinstance(summary, dict) else None
    if not isinstance(files, list):
        return set()
    return {f for f in files if isinstance(f, str) and "/" not in f} | {"summary.json"}


def _legacy_board_file(rel: str, path: Path) -> bool:
    """Whether `rel` in a board folder without a manifest is a file the board writer made."""
    head, _, name = rel.rpartition("/")
    if head == "figures":
        return name.endswith((".png", ".svg"))
    if head == "tasks":
        return name.endswith(".html") and _PAGE_SIGNATURE in _read_head(path)
    if head:
        return False
    if name in BOARD_TABLES or (name.startswith("by_") and name.endswith(".csv")):
        return True
    if name in ("index.html", "steps.html"):
        return _PAGE_SIGNATURE in _read_head(path)
    if name == "README.md":
        return _README_SIGNATURE in _read_head(path, 1 << 20)
    if name == "leaderboard.yaml":
        return _read_head(path, 200).startswith(RUN_HEADER)
    return False


def _header_experiment(folder: Path) -> str | None:
    """The experiment file named by the `captrack run` header of ``folder/leaderboard.yaml``, when it is beside it."""
    first = _read_head(folder / "leaderboard.yaml", 400).partition("\n")[0]
    if not first.startswith(RUN_HEADER):
        return None
    name = first[len(RUN_HEADER):].partition("`")[0].strip()
    return name if name and "/" not in name and (folder / name).is_file() else None


def claim_folder(folder: Path, kind: Kind, inputs: Iterable[Path] = (), label: str | None = None) -> OutputFolder:
    """Check that captrack may write its `kind` of outputs into `folder`; returns what it owns there.

    Args:
        folder: the output folder (need not exist).
        kind: "compare" (the folder is replaced whole) or "leaderboard" (written in place).
        inputs: files or folders captrack reads in this write and never writes (e.g. the experiment file,
            the work folder); those inside `folder` are left alone.
        label: how the folder is named in the error (default: "--out DIR" or "leaderboard folder DIR").

    Raises:
        ForeignFilesError: `folder` holds a file (or link, or for a comparison a sub-folder) captrack did not
            write; the first one by path is named, with the fix. Nothing has been written.
        InputError: `folder` is a file or a link.
    """
    label = label or (f"--out {folder}" if kind == "compare" else f"leaderboard folder {folder}")
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InputError(f"{label} is a {'link' if folder.is_symlink() else 'file'}; give a folder (nothing was written)")
    kept = {r for r in (_rel(p, folder) for p in inputs) if r and r != "."}
    if not folder.exists():
        return OutputFolder(folder, frozenset(), frozenset(kept))
    manifest = read_json_or_none(folder / MANIFEST)
    owned: set[str] = set()
    legacy = not isinstance(manifest, dict)
    if isinstance(manifest, dict):
        owned = _names(manifest.get("files"))
        kept |= _names(manifest.get("inputs"))
    elif kind == "compare":
        owned = _legacy_compare(folder)
    elif (folder / "leaderboard.yaml").is_file():
        named = _header_experiment(folder)
        kept |= {named} if named else set()
    skip = frozenset(kept | {MANIFEST})
    foreign: list[str] = []
    for rel, entry in _entries(folder, skip):
        if entry.is_symlink():
            foreign.append(rel)
        elif entry.is_dir():
            if kind == "compare":
                foreign.append(rel + "/")
        elif rel in owned:
            continue
        elif legacy and kind == "leaderboard" and (folder / "leaderboard.yaml").is_file() \
                and _legacy_board_file(rel, folder / rel):
            owned.add(rel)
        else:
            foreign.append(rel)
    if (folder / MANIFEST).is_symlink() or ((folder / MANIFEST).exists() and not (folder / MANIFEST).is_file()):
        foreign.insert(0, MANIFEST)
    if foreign:
        more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
        raise ForeignFilesError(
            f"{label} holds {foreign[0]}{more}, which captrack did not write (it is not in {MANIFEST} nor one of "
            f"captrack's outputs); captrack only writes into a new or empty folder or one it wrote: give another "
            f"folder, or move the file out (nothing was written)")
    return OutputFolder(folder, frozenset(owned), frozenset(kept))


def write_manifest(folder: Path, kind: Kind, written: Iterable[Path | str], claimed: OutputFolder | None = None) -> Path:
    """Write ``folder/.captrack-manifest.json``: the files `written` (paths, or names relative to `folder`) and,
    for a board written in place, the files captrack owned there before and still finds, plus its inputs.

    Sorted and without timestamps, so rebuilding a board from the same inputs writes the same manifest.
    """
    names = {n for n in ((_rel(Path(w), folder) if Path(w).is_absolute() else Path(w).as_posix()) for w in written) if n}
    inputs: set[str] = set()
    if claimed is not None:
        names |= {f for f in claimed.owned if (folder / f).is_file() and not (folder / f).is_symlink()}
        inputs = set(claimed.inputs) - names
    names.discard(MANIFEST)
    record = {"written_by": f"captrack {kind}", "files": sorted(names), "inputs": sorted(inputs)}
    return write_atomic(folder / MANIFEST, json.dumps(record, indent=1) + "\n")
