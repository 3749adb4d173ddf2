"""The CapTrack dataset mirror: ``<dir>/data/<config>/data.parquet`` laid out like the hub dataset.

Rows carry the hub's fields (``id, family, prompt, formatted_prompt, ctx, choices, gold, meta, schema,
tool_spec``) plus ``config`` and ``revision``: the dataset revision the row came from (the hub commit,
or ``local-<builder version>-<content hash>`` for a mirror built from the original files), so every
per-sample log names the data it was scored on. ``manifest.json`` at the root records, per config,
the row count, the revision and, for configs that could not be built, why.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.errors import InputError
from captrack.files import write_atomic

__all__ = [
    "DATA_DIR_ENV",
    "HUB_DATASET",
    "ROW_FIELDS",
    "SUBSETS",
    "config_path",
    "content_revision",
    "data_dir",
    "load_config",
    "normalise_row",
    "read_manifest",
    "read_rows",
    "write_config",
    "write_manifest",
]

HUB_DATASET = "tri-fair-lab/captrack"
DATA_DIR_ENV = "CAPTRACK_DATA_DIR"
ROW_FIELDS: tuple[str, ...] = (
    "id", "family", "prompt", "formatted_prompt", "ctx", "choices", "gold", "meta", "schema", "tool_spec",
)
_EXTRA_FIELDS = ("config", "revision")
_JSON_FIELDS = ("meta", "schema", "tool_spec")
_BUILD_HINT = (
    f"set {DATA_DIR_ENV} (or the task's metadata.data_dir) to a mirror: "
    "`captrack data build --sources <folder of original benchmark files> --out DIR` builds one offline, "
    f"`captrack data mirror --out DIR` copies the hub dataset {HUB_DATASET}"
)


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The mirror root: `explicit`, else $CAPTRACK_DATA_DIR.

    Raises:
        InputError: neither is set, or the folder does not exist (the message says how to build one).
    """
    chosen = explicit or os.environ.get(DATA_DIR_ENV)
    if not chosen:
        raise InputError(f"no CapTrack data mirror configured; {_BUILD_HINT}")
    root = Path(chosen).expanduser()
    if not root.is_dir():
        raise InputError(f"CapTrack data mirror {root} does not exist; {_BUILD_HINT}")
    return root


SUBSETS = ("sample", "full")


def config_path(root: Path, config: str, subset: str = "sample") -> Path:
    """Where one config's rows live in a mirror: the seeded sample (the hub's), or ``full``, every row of
    the source (``captrack data build --full``; ``<dir>/data/<config>/full/data.parquet``)."""
    if subset not in SUBSETS:
        raise InputError(f"subset {subset!r} is not one of {SUBSETS} (task metadata 'subset')")
    folder = root / "data" / config
    return folder / "full" / "data.parquet" if subset == "full" else folder / "data.parquet"


def normalise_row(raw: Mapping[str, Any], config: str) -> dict[str, Any]:
    """A row with exactly the mirror's fields and types (JSON fields as text, choices a list of str).

    Raises:
        InputError: a required field (id, prompt) is missing.
    """
    for key in ("id", "prompt"):
        if raw.get(key) in (None, ""):
            raise InputError(f"config {config}: row {raw.get('id', '?')!r} has no {key!r}")
    row: dict[str, Any] = {}
    for key in ROW_FIELDS:
        value = raw.get(key)
        if key in _JSON_FIELDS:
            row[key] = value if isinstance(value, str) else ("" if value is None else json.dumps(value))
        elif key == "choices":
            row[key] = [str(c) for c in (value or [])]
        elif key == "gold":
            row[key] = value if isinstance(value, str) else json.dumps(value)
        else:
            row[key] = "" if value is None else str(value)
    row["family"] = row["family"] or config.split(".")[0]
    row["config"] = config
    row["revision"] = str(raw.get("revision") or "")
    return row


def content_revision(rows: Sequence[Mapping[str, Any]], builder_version: str) -> str:
    """A revision naming built rows by content: same rows, same revision on every machine."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps({k: row[k] for k in ROW_FIELDS}, sort_keys=True).encode())
    return f"local-{builder_version}-{digest.hexdigest()[:12]}"


def write_config(root: Path, config: str, rows: Sequence[Mapping[str, Any]], subset: str = "sample") -> Path:
    """Write one config's rows atomically (temp file, then rename); returns the parquet path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    fields = [*ROW_FIELDS, *_EXTRA_FIELDS]
    schema = pa.schema([(f, pa.list_(pa.string()) if f == "choices" else pa.string()) for f in fields])
    table = pa.Table.from_pylist([{f: r[f] for f in fields} for r in rows], schema=schema)
    target = config_path(root, config, subset)
    target.parent.mkdir(parents=True, exist_ok=True)
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer)
    return write_atomic(target, buffer.getvalue().to_pybytes())  # fsync'ed, umask's mode


def read_manifest(root: Path) -> dict[str, Any]:
    """The mirror's manifest (empty when it has none)."""
    path = root / "manifest.json"
    if not path.is_file():
        return {}
    try:
        manifest: dict[str, Any] = load_json(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); rebuild the mirror") from exc
    return manifest


def write_manifest(root: Path, manifest: Mapping[str, Any]) -> Path:
    """Write the manifest atomically."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "manifest.json"
    write_atomic(path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return path


def read_rows(root: Path, config: str, subset: str = "sample") -> list[dict[str, Any]]:
    """One config's rows as dicts (``subset="full"``: the whole source where the mirror was built with it).

    Raises:
        InputError: the config is missing from the mirror (with the builder's reason when it has one).
    """
    import pyarrow.parquet as pq

    path = config_path(root, config, subset)
    if subset == "full" and not path.is_file():
        if config_path(root, config).is_file() and _is_whole_source(config):
            path = config_path(root, config)  # its sample already is every row of the source
        else:
            raise InputError(f"config {config} has no full subset in {root} ({path} is missing); build it offline with "
                             "`captrack data build --sources <files> --out DIR --full` (the hub holds only the samples)")
    if not path.is_file():
        entry = read_manifest(root).get("configs", {}).get(config, {})
        why = f" (the builder could not build it: {entry['reason']})" if entry.get("reason") else ""
        raise InputError(f"config {config} is not in the CapTrack data mirror {root}: {path} is missing{why}; {_BUILD_HINT}")
    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    if not rows:
        raise InputError(f"{path} holds no rows; rebuild config {config}")
    missing = sorted(set(ROW_FIELDS) - set(rows[0]))
    if missing:
        raise InputError(f"{path}: rows lack the fields {missing}; it is not a CapTrack mirror file")
    return rows


def load_config(config: str, **metadata: Any) -> Any:
    """lm-eval ``custom_dataset`` entry: one config of the mirror as a DatasetDict with a ``train`` split.

    Args:
        config: the CapTrack config (``gsm8k.subset``).
        metadata: the task metadata; ``data_dir`` is the mirror root (default: $CAPTRACK_DATA_DIR),
            ``dataset_revision``, when set, the revision every row must carry, and ``subset``
            ``sample`` (default) or ``full`` (every row of the source, see :func:`config_path`).

    Raises:
        InputError: no mirror, a missing config, or a revision other than the pinned one.
    """
    import datasets

    root = data_dir(metadata.get("data_dir"))
    dataset_revision = metadata.get("dataset_revision")
    rows = read_rows(root, config, str(metadata.get("subset") or "sample"))
    fallback = str(read_manifest(root).get("revision") or "unknown")
    for row in rows:
        row.setdefault("config", config)
        row["revision"] = row.get("revision") or fallback
    found = sorted({str(r["revision"]) for r in rows})
    if dataset_revision and found != [dataset_revision]:
        raise InputError(
            f"config {config} in {root} has revision {', '.join(found)} but the task pins "
            f"metadata.dataset_revision {dataset_revision}; rebuild the mirror or change the pin"
        )
    return datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)})


def _is_whole_source(config: str) -> bool:
    from captrack.official.configs import CONFIGS

    found = CONFIGS.get(config)
    return found is not None and found.size is None
