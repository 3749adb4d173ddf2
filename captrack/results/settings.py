"""Evaluation settings that change scores, read from each run's lm-eval results file, and the
differences between a base and a variant.

Prompting (chat template, few-shot count, generation kwargs, lm-eval version) and the machinery that
computed the numbers (backend, DeepSpeed placement and tensor-parallel degree, dtype, batch size: a
bfloat16 base against a float32 variant, or an hf base against a DeepSpeed variant, differs for a
reason that is not post-training). compare says so in summary.json and report.md instead of staying
silent, and `captrack compare --strict` refuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.results.store import Store

__all__ = ["MOVED", "run_settings", "setting_warnings"]

MOVED = "results file moved"
"""run_settings' key for the results files of runs that are no longer where they were ingested from."""

_FIXES = {
    "chat template": "evaluate both with the same --apply_chat_template",
    "system instruction": "evaluate both with the same --system_instruction",
    "few-shot as multi-turn": "evaluate both with the same --fewshot_as_multiturn",
    "max length": "evaluate both with the same model_args max_length (prompts are cut at it)",
    "few-shot count": "evaluate both with the same --num_fewshot",
    "generation kwargs": "evaluate both with the same --gen_kwargs",
    "lm-eval version": "evaluate both with the same lm-eval version",
    "backend": "evaluate both with the same --model backend (hf, captrack-ds, ...)",
    "placement": "evaluate both with the same captrack-ds mode and offload",
    "tensor-parallel degree": "evaluate both on the same number of ranks",
    "dtype": "evaluate both in the same dtype (model_args dtype=...)",
    "batch size": "evaluate both with the same --batch_size (padding and batched kernels change the last bits)",
    "backend version": "evaluate both with the same backend library and torch versions (kernels change the last bits)",
    "batch invariance": "evaluate both with the same VLLM_BATCH_INVARIANT (off: a request's logits depend on its batch)",
}


def _backend(config: dict[str, Any]) -> dict[str, str]:
    """Backend, placement, tensor-parallel degree, dtype and batch size from a results file's config; the backend's
    version and vLLM's batch invariance where captrack recorded them (captrack.lmeval.backend_info), compared only when
    both runs have them."""
    args = config.get("model_args")
    asked = args.get("dtype") if isinstance(args, dict) else None
    if isinstance(args, str):
        asked = next((kv.split("=", 1)[1] for kv in args.split(",") if kv.strip().startswith("dtype=")), None)
    mode = config.get("deepspeed_mode")
    tp = config.get("deepspeed_world_size") if mode in ("tp", "autotp") else 1
    dtype = config.get("deepspeed_dtype") or config.get("model_dtype") or asked
    return {
        "backend": str(config.get("model") or "unknown"),
        "placement": f"mode={mode}, offload={config.get('deepspeed_offload', 'none')}" if mode else "one process",
        "tensor-parallel degree": str(tp),
        "dtype": str(dtype).removeprefix("torch.") if dtype else "unknown",
        "batch size": str(config.get("batch_size", "unknown")),
        **({"backend version": str(config["backend_version"])} if config.get("backend_version") else {}),
        **({"batch invariance": str(config["vllm_batch_invariant"])} if config.get("vllm_batch_invariant") else {}),
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
        "system instruction": _system_instruction(data),
        "few-shot as multi-turn": str(bool(data.get("fewshot_as_multiturn"))).lower(),
        "max length": _model_arg(data.get("config") or {}, "max_length") or "the model's default",
        **_backend(data.get("config") or {}),
    }


def _system_instruction(data: dict[str, Any]) -> str:
    sha, text = data.get("system_instruction_sha"), data.get("system_instruction")
    if sha:
        return f"sha {str(sha)[:12]}"
    return f"{str(text)[:60]!r}" if text else "none"


def _model_arg(config: dict[str, Any], key: str) -> str | None:
    """One of lm-eval's model_args (a mapping, or its ``k=v,k=v`` text), as text; None when not given."""
    args = config.get("model_args")
    if isinstance(args, dict):
        return str(args[key]) if args.get(key) is not None else None
    if isinstance(args, str):
        return next((kv.split("=", 1)[1].strip() for kv in args.split(",") if kv.strip().startswith(f"{key}=")), None)
    return None


def run_settings(store: Store, model: str) -> dict[str, set[str]]:
    """Per setting, the values `model`'s runs were made with (read from their results files when present)."""
    rows = store.con.execute("SELECT results_path, lm_eval_version, config FROM runs WHERE model = ?", [model]).fetchall()
    values: dict[str, set[str]] = {}
    for results_path, version, config in rows:
        path = Path(str(results_path))
        if not path.is_file():
            values.setdefault(MOVED, set()).add(str(path))
        if path.is_file():
            settings = _from_results(load_json(path.read_text(encoding="utf-8")))
        else:  # results file moved since ingest: what the store kept
            kept = load_json(config) if isinstance(config, str) else (config or {})
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
    moved = sorted(ours.get(MOVED, set()) | theirs.get(MOVED, set()))
    if moved:
        warnings.append(f"{variant}: settings not checked against base {base!r}: results file(s) moved or deleted since "
                        f"ingest ({', '.join(moved[:3])}{' ...' if len(moved) > 3 else ''}), so only the lm-eval version "
                        "and --gen_kwargs were compared; put the files back or ingest the runs again from where they are")
    return warnings
