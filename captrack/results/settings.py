"""Evaluation settings that change scores (chat template, few-shot, generation kwargs, lm-eval version),
read from each run's lm-eval results file, and the differences between a base and a variant.

A base evaluated with ``--apply_chat_template`` and a variant without it differ for a reason that is
not post-training; compare says so in summary.json and report.md instead of staying silent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from captrack.results.store import Store

__all__ = ["run_settings", "setting_warnings"]

_FIXES = {
    "chat template": "evaluate both with the same --apply_chat_template (and --system_instruction)",
    "few-shot count": "evaluate both with the same --num_fewshot",
    "generation kwargs": "evaluate both with the same --gen_kwargs",
    "lm-eval version": "evaluate both with the same lm-eval version",
}


def _from_results(data: dict[str, Any]) -> dict[str, Any]:
    """The score-changing settings of one lm-eval results file."""
    configs = data.get("configs") or {}
    sha = data.get("chat_template_sha")
    return {
        "chat template": f"applied (sha {str(sha)[:12]})" if sha else ("applied" if data.get("chat_template") else "not applied"),
        "few-shot count": json.dumps(data.get("n-shot") or {t: c.get("num_fewshot") for t, c in configs.items()}, sort_keys=True),
        "generation kwargs": json.dumps({"--gen_kwargs": (data.get("config") or {}).get("gen_kwargs"),
                                         **{t: c.get("generation_kwargs") for t, c in configs.items() if c.get("generation_kwargs")}},
                                        sort_keys=True, default=str),
        "lm-eval version": str(data.get("lm_eval_version") or "unknown"),
    }


def run_settings(store: Store, model: str) -> dict[str, set[str]]:
    """Per setting, the values `model`'s runs were made with (read from their results files when present)."""
    rows = store.con.execute("SELECT results_path, lm_eval_version, config FROM runs WHERE model = ?", [model]).fetchall()
    values: dict[str, set[str]] = {}
    for results_path, version, config in rows:
        path = Path(str(results_path))
        if path.is_file():
            settings = _from_results(json.loads(path.read_text(encoding="utf-8")))
        else:  # results file moved since ingest: what the store kept
            kept = json.loads(config) if isinstance(config, str) else (config or {})
            settings = {"lm-eval version": str(version or "unknown"),
                        "generation kwargs": json.dumps({"--gen_kwargs": kept.get("gen_kwargs")}, sort_keys=True, default=str)}
        for key, value in settings.items():
            values.setdefault(key, set()).add(value)
    return values


def setting_warnings(store: Store, base: str, variant: str) -> list[str]:
    """One warning per setting the base and the variant were evaluated with differently, naming the fix."""
    ours, theirs = run_settings(store, base), run_settings(store, variant)
    warnings = []
    for key, fix in _FIXES.items():
        b, v = ours.get(key), theirs.get(key)
        if b is not None and v is not None and b != v:
            warnings.append(f"{variant}: {key} differs from base {base!r}: base {' | '.join(sorted(b))}, "
                            f"variant {' | '.join(sorted(v))}; drift may reflect the setting, not post-training: {fix}")
    return warnings
