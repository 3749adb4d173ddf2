"""Measure the null baselines of the forced-choice and contrast probes with random-weight models.

    python tests/benchmarks/measure_probe_nulls.py [--seeds 0 1 2 3 4] [--items 100] [--tasks T ...]
        [--work /tmp/captrack-nulls] [--dtype bfloat16] [--write]

For each seed: ``LlamaForCausalLM`` built from the demo model's config (SmolLM2-135M-Instruct, 30 layers,
tied embeddings) after ``torch.manual_seed(seed)``, so its weights are transformers' own initialisation
(normal, std ``initializer_range`` = 0.02); the tokenizer and chat template are the dequantised demo
model's (``resolve_model("smollm2-135m-instruct")``: the local cache, nothing is downloaded). Each model
is evaluated as the demo evaluates (lm-eval's ``simple_evaluate``, the ``captrack-hf`` backend, chat
template, batch 64, the demo's dtype) on the first ``--items`` items of probe seed 1234 of every task
``captrack.probes.null_baselines.choice_tasks`` lists. Per-item outcomes land in ``--work`` (one JSON per
seed and task, reused when the task's version and item count match), then the table is printed and, with
``--write``, written to ``captrack/probes/null_baselines.yaml`` (CI: ``crossed_interval``).

Why the log-softmax runs in float32 (``--softmax-dtype``, HFLM's ``softmax_dtype``) while the weights are
bfloat16 as in the demo: lm-eval (and captrack-hf) take the log-softmax in the model's dtype, so a bfloat16
loglikelihood is rounded to 8 significant bits (0.25 nats at -40, 1 nat at -140). A random-weight model is
near-uniform (about -10.8 nats a token whatever the context), so its options and its two contexts round to
the same value: on 2 seeds x 16 items the contrast tasks scored 0.16-0.28 and H5 0.09, because a tie counts as
wrong in a contrast and goes to the first option in ``acc``. That measures the rounding, not the task: the
demo's trained models tie on 0-3% of items (runs/demo, base and variants, every forced-choice task).

Cost: about 20 minutes of one shared core for the committed table (5 seeds; the longest-context tasks, H3
and H5, on fewer items).
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from captrack.probes import generate
from captrack.probes.null_baselines import (
    METHOD,
    NULL_BASELINES,
    ChoiceTask,
    chance_adjusted_metrics,
    choice_tasks,
    crossed_interval,
    stated_chance,
)

DEMO_MODEL = "smollm2-135m-instruct"


@functools.lru_cache(maxsize=1)
def _random_model(seed: int, dtype: str) -> tuple[Any, Any]:
    """A random-weight model of the demo's architecture and the demo's tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from captrack.models import resolve_model

    folder = resolve_model(DEMO_MODEL)
    config = AutoConfig.from_pretrained(folder)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config).to(getattr(torch, dtype)).eval()
    return model, AutoTokenizer.from_pretrained(folder)


def _evaluate(seed: int, tasks: list[ChoiceTask], items: int, dtype: str,
              softmax: str | None) -> dict[str, list[dict[str, Any]]]:
    """Per-item samples of each task for the seed's random model (lm-eval's simple_evaluate, captrack-hf)."""
    from lm_eval import simple_evaluate

    from captrack.backends.shared_prefix import SharedPrefixLM
    from captrack.lmeval.evaluate import match_tasks

    model, tokenizer = _random_model(seed, dtype)
    lm = SharedPrefixLM(pretrained=model, tokenizer=tokenizer, batch_size=64, softmax_dtype=softmax)
    manager, names = match_tasks([t.task for t in tasks], {"n": items})
    results = simple_evaluate(model=lm, tasks=names, batch_size=64, device="cpu", log_samples=True,
                              apply_chat_template=True, task_manager=manager, metadata={"n": items},
                              random_seed=0, numpy_random_seed=0, torch_random_seed=0, fewshot_random_seed=0)
    assert results is not None
    return dict(results["samples"])


def _outcomes(task: ChoiceTask, samples: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(samples, key=lambda s: int(s["doc_id"]))
    return {"version": task.version, "items": len(ordered),
            "outcomes": {m: [float(s[m]) for s in ordered] for m in task.metrics},
            "loglikelihoods": [[float(r[0]) for r in s["filtered_resps"]] for s in ordered]}


def _run_path(work: Path, seed: int, task: ChoiceTask) -> Path:
    return work / f"seed{seed}_{task.task}.json"


def _fresh(path: Path, task: ChoiceTask, items: int) -> bool:
    if not path.is_file():
        return False
    done = json.loads(path.read_text())
    return bool(done["version"] == task.version and done["items"] == min(items, _n_docs(task, items)))


def _n_docs(task: ChoiceTask, items: int) -> int:
    options = {k: v for k, v in task.metadata.items() if k not in ("seed", "n")}
    return len(generate(task.generator, int(task.metadata.get("seed", 1234)), items, **options))


def _row(task: ChoiceTask, metric: str, seeds: list[int], work: Path, items: int) -> dict[str, Any]:
    runs = [json.loads(_run_path(work, s, task).read_text()) for s in seeds]
    table = np.array([run["outcomes"][metric] for run in runs], dtype=float)
    ci = crossed_interval(table)
    chance = stated_chance(task, table.shape[1]) if metric in chance_adjusted_metrics(task) else None
    return {"task": task.task, "metric": metric, "version": task.version, "items": int(table.shape[1]),
            "seeds": list(seeds), "chance": None if chance is None else round(chance, 4),
            "measured": round(ci.mean, 4), "ci_low": round(ci.low, 4), "ci_high": round(ci.high, 4),
            "se": round(ci.se, 4), "df": round(ci.df, 1), "seed_means": [round(float(v), 4) for v in table.mean(axis=1)],
            "ties": round(float(np.mean([_tied(ll, metric) for run in runs for ll in run["loglikelihoods"]])), 4)}


def _tied(loglikelihoods: list[float], metric: str) -> bool:
    """Whether the item's decision was a tie: equal margins (contrast) or two options at the top loglikelihood."""
    if metric == "contrast_acc":
        return loglikelihoods[0] - loglikelihoods[1] == loglikelihoods[2] - loglikelihoods[3]
    return loglikelihoods.count(max(loglikelihoods)) > 1


def _write(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    import yaml

    from captrack.files import write_atomic

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    header = {
        "what": "accuracy of random-weight models of the demo's architecture on each forced-choice and contrast probe",
        "written_by": "python tests/benchmarks/measure_probe_nulls.py --write "
                      f"--seeds {' '.join(map(str, args.seeds))} --items {args.items} --items-for {' '.join(args.items_for)} "
                      f"--dtype {args.dtype} --softmax-dtype {args.softmax_dtype}",
        "model": f"LlamaForCausalLM from {DEMO_MODEL}'s config, transformers' init (std 0.02), torch.manual_seed(seed)",
        "evaluation": f"lm-eval simple_evaluate, captrack-hf, chat template, batch 64, {args.dtype} weights, "
                      f"log-softmax in {args.softmax_dtype}, CPU; "
                      f"the first min(items, generated) items of probe seed 1234",
        "ci": METHOD, "captrack_commit": commit, "date": time.strftime("%Y-%m-%d"),
        "chance": "mean over the items of 1/k (k = the item's options); null where the metric is not chance-adjusted",
    }
    text = yaml.safe_dump(header, sort_keys=False, width=120) + yaml.safe_dump({"tasks": rows}, sort_keys=False,
                                                                               width=120, default_flow_style=None)
    write_atomic(NULL_BASELINES, "# Written by tests/benchmarks/measure_probe_nulls.py; do not edit by hand.\n" + text)


def _pair(text: str) -> tuple[str, int]:
    task, _, count = text.partition("=")
    return task, int(count)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--items-for", nargs="*", default=[], metavar="TASK=N", help="items for one task")
    parser.add_argument("--tasks", nargs="*", help="task names (default: every forced-choice and contrast probe)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/captrack-nulls"))
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--softmax-dtype", default="float32",
                        help="HFLM's softmax_dtype (default float32: the module docstring says why)")
    parser.add_argument("--write", action="store_true", help=f"write {NULL_BASELINES.name}")
    args = parser.parse_args(argv)
    tasks = [t for t in choice_tasks() if (t.task in args.tasks if args.tasks else chance_adjusted_metrics(t))]
    items = {t.task: args.items for t in tasks} | dict(_pair(text) for text in args.items_for)
    args.work.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        todo = [t for t in tasks if not _fresh(_run_path(args.work, seed, t), t, items[t.task])]
        for count in sorted({items[t.task] for t in todo}):
            batch = [t for t in todo if items[t.task] == count]
            started = time.time()
            samples = _evaluate(seed, batch, count, args.dtype, args.softmax_dtype)
            for t in batch:
                _run_path(args.work, seed, t).write_text(json.dumps(_outcomes(t, samples[t.task])))
            print(f"seed {seed}: {len(batch)} tasks x {count} items in {time.time() - started:.0f} s",
                  file=sys.stderr, flush=True)
    rows = [_row(t, m, args.seeds, args.work, items[t.task]) for t in tasks for m in t.metrics]
    print(f"{'task':42} {'metric':17} {'items':>5} {'chance':>6} {'null':>6}  95% CI          seed means")
    for r in rows:
        chance = "-" if r["chance"] is None else f"{r['chance']:.3f}"
        print(f"{r['task']:42} {r['metric']:17} {r['items']:5d} {chance:>6} {r['measured']:6.3f}  "
              f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]  {' '.join(f'{v:.2f}' for v in r['seed_means'])}")
    if args.write:
        _write(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
