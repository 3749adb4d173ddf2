"""Copy the hub dataset ``tri-fair-lab/captrack`` into a local mirror (needs network access)."""

from __future__ import annotations

from pathlib import Path

from captrack.errors import InputError
from captrack.official.configs import CONFIGS
from captrack.official.mirror import HUB_DATASET, normalise_row, write_config, write_manifest

__all__ = ["mirror_hub"]


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
