"""The hub dataset ``tri-fair-lab/captrack``: load one config through the Hugging Face cache, or copy all into a mirror.

Tasks read ``data/<config>/data.parquet`` at :data:`HUB_REVISION` (a task's ``metadata.dataset_revision``
overrides it) through ``huggingface_hub``'s cache: online it downloads once, offline
(``HF_HUB_OFFLINE=1``) it reads what is cached. Every row carries ``revision = hub-<commit>``, the
commit the revision resolved to, so every samples line names the data it was scored on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from captrack.errors import DataUnavailableError, InputError
from captrack.official.configs import CONFIGS
from captrack.official.mirror import (
    DATA_DIR_ENV,
    HUB_DATASET,
    normalise_row,
    write_config,
    write_manifest,
)

__all__ = ["HUB_REVISION", "cached_hub_file", "hub_file", "hub_offline", "hub_reachable", "hub_revision", "load_hub_config",
           "mirror_hub"]

HUB_REVISION = "main"  # the one place the hub revision is set: a commit hash once one is pinned
_OFFLINE_HINT = (
    f"set {DATA_DIR_ENV} to a mirror (`captrack data build --sources DIR --out MIRROR` offline, "
    "`captrack data mirror --out MIRROR` online), or go online once so the Hugging Face cache holds it"
)


def hub_revision(metadata_revision: str | None = None) -> str:
    """The hub revision to read: ``metadata.dataset_revision`` (``hub-`` prefix allowed), else HUB_REVISION.

    Raises:
        DataUnavailableError: the pin names a locally built mirror (``local-...``), which the hub cannot serve.
    """
    if not metadata_revision:
        return HUB_REVISION
    if metadata_revision.startswith("local-"):
        raise DataUnavailableError(
            f"metadata.dataset_revision {metadata_revision} names a locally built mirror, not a hub commit; "
            f"set {DATA_DIR_ENV} to that mirror"
        )
    return metadata_revision.removeprefix("hub-")


def _data_file(config: str) -> str:
    return f"data/{config}/data.parquet"


def hub_offline() -> bool:
    """True when huggingface_hub is in offline mode (HF_HUB_OFFLINE=1)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


_REACHABLE: dict[str, bool] = {}


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """Whether the hub's endpoint accepts a TCP connection now (asked once per process and endpoint).

    Without ``HF_HUB_OFFLINE=1``, huggingface_hub retries an unreachable hub for tens of seconds per
    file before giving up; a task without local data is refused at once instead.
    """
    import socket
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    endpoint = str(constants.ENDPOINT)
    if endpoint not in _REACHABLE:
        url = urlsplit(endpoint)
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            socket.create_connection((url.hostname or "", port), timeout=timeout_s).close()
            _REACHABLE[endpoint] = True
        except OSError:
            _REACHABLE[endpoint] = False
    return _REACHABLE[endpoint]


def cached_hub_file(config: str, revision: str | None = None, repo_id: str = HUB_DATASET) -> Path | None:
    """The config's file in the Hugging Face cache at `revision`, or None when it is not cached (no network)."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, _data_file(config), revision=hub_revision(revision), repo_type="dataset")
    return Path(found) if isinstance(found, str) else None


def hub_file(config: str, revision: str | None = None, repo_id: str = HUB_DATASET) -> tuple[Path, str]:
    """The config's parquet file through the Hugging Face cache (downloaded when online) and its commit.

    Raises:
        DataUnavailableError: offline and not cached, or the hub cannot serve the file.
    """
    from huggingface_hub import hf_hub_download

    rev = hub_revision(revision)
    try:
        path = Path(hf_hub_download(repo_id, _data_file(config), repo_type="dataset", revision=rev))
    except Exception as exc:  # offline, network, auth, missing file: all leave the task without data
        raise DataUnavailableError(
            f"config {config}: cannot read {_data_file(config)} of {repo_id}@{rev} "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); {_OFFLINE_HINT}"
        ) from exc
    return path, path.parents[2].name  # .../snapshots/<commit>/data/<config>/data.parquet


def load_hub_config(config: str, **metadata: Any) -> Any:
    """lm-eval ``custom_dataset`` entry for the hub: one config as a DatasetDict with a ``train`` split."""
    import datasets
    import pyarrow.parquet as pq

    path, commit = hub_file(config, metadata.get("dataset_revision"))
    rows = [normalise_row({**r, "revision": f"hub-{commit}"}, config) for r in pq.read_table(path).to_pylist()]
    if not rows:
        raise InputError(f"{path} ({HUB_DATASET}@{commit}) holds no rows for config {config}")
    return datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)})


def mirror_hub(out: str | Path, revision: str | None = None, repo_id: str = HUB_DATASET) -> dict[str, int]:
    """Download every config's ``data/<config>/data.parquet`` and write it, with the commit, into `out`.

    Returns:
        Rows written per config.

    Raises:
        InputError: the hub cannot be reached or the dataset lacks a config.
    """
    import pyarrow.parquet as pq
    from huggingface_hub import HfApi, snapshot_download

    try:
        sha = HfApi().dataset_info(repo_id, revision=revision).sha or (revision or "unknown")
        local = Path(snapshot_download(repo_id, repo_type="dataset", revision=sha, allow_patterns=["data/*/data.parquet"]))
    except Exception as exc:  # network, auth, offline mode: all say the same thing to the user
        raise InputError(
            f"cannot download {repo_id} from the Hugging Face hub ({type(exc).__name__}: {exc}); when offline, "
            "build the mirror with `captrack data build --sources DIR`"
        ) from exc
    root, written = Path(out), {}
    for name in (n for n, c in CONFIGS.items() if c.hub):  # local configs are built, never downloaded
        path = local / "data" / name / "data.parquet"
        if not path.is_file():
            raise InputError(f"{repo_id}@{sha} has no data/{name}/data.parquet")
        rows = [normalise_row({**r, "revision": f"hub-{sha}"}, name) for r in pq.read_table(path).to_pylist()]
        write_config(root, name, rows)
        written[name] = len(rows)
    write_manifest(root, {"source": "hub", "repo_id": repo_id, "revision": f"hub-{sha}",
                          "configs": {n: {"rows": k, "revision": f"hub-{sha}", "reason": ""} for n, k in written.items()}})
    return written
