"""Where captrack's task YAMLs and taxonomy live, in a source checkout and when installed."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["cache_dir", "expand_path", "full_task_names", "full_tasks_dir", "tasks_dir", "taxonomy_path"]

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent


def _resource(checkout_name: str, installed_name: str) -> Path:
    """Return the source-checkout folder when running from one, else the installed copy."""
    in_checkout = _CHECKOUT / checkout_name
    if (_CHECKOUT / "setup.cfg").is_file() and in_checkout.is_dir():
        return in_checkout
    installed = _PACKAGE / installed_name
    if installed.is_dir():
        return installed
    raise FileNotFoundError(
        f"captrack's {checkout_name}/ folder is missing (looked in {in_checkout} and {installed}); "
        "reinstall captrack with `pip install .`"
    )


def tasks_dir() -> str:
    """Folder holding captrack's lm-eval task YAMLs (pass it to lm-eval's --include_path)."""
    return str(_resource("tasks", "_tasks"))


def full_tasks_dir() -> str:
    """Folder of the opt-in full-size official tasks (e.g. captrack_mmlu_pro_full); not on the default include path."""
    return str(_PACKAGE / "official" / "full_tasks")


def full_task_names() -> set[str]:
    """Names of the opt-in full-size tasks (the ``task:`` line of each YAML under full_tasks_dir())."""
    names = set()
    for path in Path(full_tasks_dir()).glob("*/*.yaml"):
        for line in path.read_text().splitlines():
            if line.startswith("task:"):
                names.add(line.split(":", 1)[1].strip())
    return names


def taxonomy_path() -> Path:
    """The CapTrack taxonomy file, the single source of truth for capability membership."""
    return _resource("taxonomy", "_taxonomy") / "captrack.yaml"


def cache_dir() -> Path:
    """captrack's cache root: $CAPTRACK_CACHE, else ~/.cache/captrack."""
    root = os.environ.get("CAPTRACK_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "captrack"


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)


def expand_path(text: str, folder: Path) -> Path:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in `text` and resolve it relative to `folder`.

    Raises:
        InputError: a variable whose name says it holds a secret (KEY, TOKEN, SECRET, PASSWORD): its value
            would name a folder and be written into the board's files (the message names the variable only).
    """
    from captrack.errors import InputError

    for match in _VAR.finditer(text):
        if _SECRET_NAME.search(match.group(1)):
            raise InputError(f"path {text!r} uses ${{{match.group(1)}}}, whose name says it holds a secret; a path "
                             "names folders and is written into leaderboard.yaml, so write the path itself")
    expanded = _VAR.sub(lambda m: os.environ.get(m.group(1)) or (m.group(2) or ""), text)
    path = Path(expanded).expanduser()
    return path if path.is_absolute() else (folder / path).resolve()
