"""What a served evaluation records: the same backend settings an in-process vLLM evaluation records, so that compare
sees one backend (captrack.results.settings) and warns only where they truly differ.

lm-eval writes the client's view (``model: local-completions``, its ``base_url`` and ``tokenizer`` arguments). The
numbers were computed by vLLM with the checkpoint's vLLM arguments, so the results file's ``config`` is rewritten to
``model: vllm``, those ``model_args`` (their ``dtype`` and context length), the backend's version and batch invariance
(captrack.lmeval.backend_info, from the server's environment; the server's ``/version`` where this environment has no
vLLM or another one), and ``served``, which says the numbers came through a server and which lm-eval client asked.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["SERVED_KEY", "record_served", "served_config", "server_version"]

SERVED_KEY = "served"
"""The results config's key that says the numbers came through a server (absent from an in-process run's)."""


def server_version(url: str) -> str | None:
    """The version a vLLM server at `url` reports (``GET /version``), None when it does not answer one."""
    try:
        with urllib.request.urlopen(f"{url}/version", timeout=10) as reply:
            version = json.loads(reply.read()).get("version")
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return None
    return str(version) if version else None


def served_config(model_args: Mapping[str, Any], url: str, client: str, env: Mapping[str, str]) -> dict[str, Any]:
    """The config keys of an evaluation of vLLM `model_args` served at `url` to lm-eval's `client` model, the server's
    environment `env`: those an in-process vLLM run records, plus :data:`SERVED_KEY`."""
    from captrack.lmeval.backend_info import BACKEND_VERSION_KEY, backend_info
    from captrack.lmeval.vllm_shim import VLLM_MODEL

    info = backend_info(VLLM_MODEL, dict(env))
    reported = server_version(url)
    installed = str(info.get(BACKEND_VERSION_KEY, ""))
    if reported and f" {reported}" not in installed.split(",")[0]:  # the server is not this environment's vLLM
        info[BACKEND_VERSION_KEY] = f"vllm {reported}"
    return {"model": VLLM_MODEL, "model_args": dict(model_args), **info,
            SERVED_KEY: f"vLLM {reported or installed or 'of unknown version'} server, lm-eval {client} client"}


def record_served(results_file: Path, config: Mapping[str, Any]) -> None:
    """Rewrite `results_file`'s ``config`` (and lm-eval's ``model_source``) with `config` (:func:`served_config`)."""
    from captrack.files import write_atomic

    data = json.loads(results_file.read_text(encoding="utf-8"))
    data.setdefault("config", {}).update(config)
    if "model_source" in data:
        data["model_source"] = config["model"]
    write_atomic(results_file, json.dumps(data, indent=2, default=str, ensure_ascii=False))
