"""Benchmark `captrack ingest` and `captrack compare` at scale on synthetic lm-eval output.

    python tests/benchmarks/bench_analysis.py [--variants 4 --tasks 50 --items 5000
                                               --bootstrap 1000 --workdir /tmp/captrack-bench]

Phases, each run in its own subprocess (this script re-invoked with --phase) so that the peak
RSS of each is its own:

  generate  a base + N variants x T tasks x I items of lm-eval 0.4.13 --log_samples output, one
            binary metric ``acc`` per multiple-choice task (4 options), lines of realistic size;
            the same fields and nesting as tests/fakeruns.py (checked against it). Reused when
            already in the workdir.
  floor     DuckDB read_json over every samples file with only the fields ingest reads projected
            (doc_id, doc_hash, prompt_hash, filter, the metric, filtered_resps, target, and the doc's
            revision and choices), DuckDB's default options: the speed a reader of these files cannot beat.
  floor-min the same without target and doc (the projection this benchmark used before issue 28;
            figures only).
  floor-1g  the same query with the maximum_object_size (1 GiB) captrack's ingest reads a file with
            only after a line longer than DuckDB's 16 MiB default (figures only: what that option costs).
  floor-write DuckDB's own write of the floor's projection (the same fields, typed as the floor reads them)
            into a fresh database file, one INSERT per run in its own transaction as ingest files each run,
            then a checkpoint (no vacuum, insertion order not kept): no check, no fingerprint, no label:
            the least a DuckDB store costs to fill with these rows, the reference the ingest target is set
            against (its own peak RSS is DuckDB's, no target).
  ingest    captrack's Store.ingest of every run into a fresh DuckDB file (the Python API the
            `captrack ingest` command calls, one call per model, as one would run the command).
  compare   captrack.compare (bootstrap resamples) of the variants against the base, read from the
            store, plus write_comparison of every output file.

It prints figures and PASS/MISS against targets (ingest <= 1.5x floor-write time, DuckDB's own write of the same
fields: a reader of these files that stores them cannot beat it; compare <= 30 s; every phase's peak RSS <= 2 GB)
and, last, one machine-readable line
``RESULT {"records": N, "floor_s": x, "floor_write_s": w, "ingest_s": y, "ingest_over_floor": y/x,
"ingest_over_floor_write": y/w, "compare_s": z, "peak_rss_mb": m}``
(N: variant records; m: the largest peak RSS of the timed phases, figures-only phases left out); it asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
for _path in (REPO, Path(__file__).resolve().parent):  # captrack, and this folder's treerss
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

FORMAT_VERSION = 2  # bump when the generated files change, so old workdirs are regenerated
DATE_ID = "2026-01-01T00-00-00.000000"
BASE = "bench/base"
N_CHOICES = 4
LETTERS = "ABCD"
# Taxonomy members scored with `acc`: the first tasks take these names so that capability
# aggregates (and their bootstrap CIs) are exercised; the rest are untracked bench tasks.
TRACKED_ACC_TASKS = (
    "captrack_mmlu_pro_subset", "captrack_probe_c1_facts", "captrack_supergpqa_subset",
    "captrack_boolq_subset", "captrack_truthfulqa_full", "captrack_mmlu_pro_rephrased",
    "captrack_winogrande_subset", "captrack_hellaswag_subset", "captrack_longbenchv2_full",
)
ALGORITHMS = ("SFT", "DPO", "RL", "SFT+DPO")
TARGET_RSS_MB = 2048.0
TARGET_INGEST_RATIO = 1.5  # x floor-write (issue 44: DuckDB's own write of the fields already takes 1.3-1.9x the scan)
TARGET_COMPARE_S = 30.0
WORDS = (
    "the of and to in is was for that on as with by at from his an were are which be this "
    "had not or have one their first new also after who but they has been its other time two "
    "system energy cell theory value model market water light force number species reaction "
    "court law state city river war king church music film language population temperature "
    "pressure protein gene function equation sample data rate growth process structure "
    "element surface current field mass velocity acid carbon oxygen enzyme membrane tissue"
).split()


# --------------------------------------------------------------------------------------------
# layout


def task_names(n_tasks: int) -> list[str]:
    names = list(TRACKED_ACC_TASKS[:n_tasks])
    names += [f"bench_task_{i:03d}" for i in range(len(names), n_tasks)]
    return names


def model_names(n_variants: int) -> list[str]:
    return [BASE] + [f"bench/variant-{v + 1}" for v in range(n_variants)]


def algorithm_of(model: str) -> str:
    if model == BASE:
        return ""
    index = int(model.rsplit("-", 1)[1]) - 1
    return ALGORITHMS[index % len(ALGORITHMS)]


def data_dir(args: argparse.Namespace) -> Path:
    return Path(args.workdir) / f"data-v{args.variants}-t{args.tasks}-i{args.items}"


def model_dir(args: argparse.Namespace, model: str) -> Path:
    return data_dir(args) / model.replace("/", "__")


def samples_files(args: argparse.Namespace) -> list[Path]:
    return [
        model_dir(args, m) / f"samples_{t}_{DATE_ID}.jsonl"
        for m in model_names(args.variants)
        for t in task_names(args.tasks)
    ]


def manifest(args: argparse.Namespace) -> dict[str, Any]:
    return {"format": FORMAT_VERSION, "variants": args.variants, "tasks": args.tasks, "items": args.items}


def generated_ok(args: argparse.Namespace) -> bool:
    path = data_dir(args) / "manifest.json"
    try:
        if json.loads(path.read_text()) != manifest(args):
            return False
    except (OSError, json.JSONDecodeError):
        return False
    results = [model_dir(args, m) / f"results_{DATE_ID}.json" for m in model_names(args.variants)]
    return all(p.is_file() for p in results + samples_files(args))


# --------------------------------------------------------------------------------------------
# phase: generate


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _task_seed(task_index: int) -> int:
    return 1_000_003 * (task_index + 1)


def _write_task(job: tuple[str, int, int, int, str]) -> dict[str, float]:
    """Write samples_<task>_<date>.jsonl for every model; returns mean acc per model."""
    import numpy as np

    task, task_index, n_items, n_variants, root = job
    rng = np.random.default_rng(_task_seed(task_index))
    models = model_names(n_variants)
    n = n_items
    n_words = len(WORDS)

    # Documents and the prompt: identical for every model, so doc_hash/prompt_hash pair them.
    q_len = rng.integers(28, 48, size=n)
    c_len = rng.integers(3, 7, size=(n, N_CHOICES))
    word_idx = rng.integers(0, n_words, size=(n, 48 + N_CHOICES * 7))
    gold = rng.integers(0, N_CHOICES, size=n)
    subject = task.removeprefix("captrack_").removeprefix("bench_")
    heads, tails = [], []
    for i in range(n):
        w = word_idx[i]
        question = f"{task} item {i}: " + " ".join(WORDS[j] for j in w[: q_len[i]]) + "?"
        choices = []
        for c in range(N_CHOICES):
            start = 48 + 7 * c
            choices.append(" ".join(WORDS[j] for j in w[start : start + c_len[i, c]]))
        doc = {"question": question, "subject": subject, "choices": choices, "answer": int(gold[i])}
        prompt = (
            f"The following is a multiple choice question about {subject}.\n\n{question}\n"
            + "".join(f"{LETTERS[c]}. {choices[c]}\n" for c in range(N_CHOICES))
            + "Answer:"
        )
        target = str(int(gold[i]))
        arguments = {f"gen_args_{c}": {"arg_0": prompt, "arg_1": f" {LETTERS[c]}"} for c in range(N_CHOICES)}
        heads.append(
            f'{{"doc_id": {i}, "doc": {json.dumps(doc)}, "target": {json.dumps(target)}, '
            f'"arguments": {json.dumps(arguments)}, "resps": ['
        )
        tails.append(
            f', "filter": "none", "metrics": ["acc"], "doc_hash": "{_sha(json.dumps(doc, indent=2))}", '
            f'"prompt_hash": "{_sha(prompt)}", "target_hash": "{_sha(target)}", "acc": '
        )

    # Correctness: base accuracy per task, each variant forgets / gains a share of items.
    base_acc = 0.35 + 0.55 * rng.random()
    base_correct = rng.random(n) < base_acc
    means: dict[str, float] = {}
    for m_index, model in enumerate(models):
        if m_index == 0:
            correct = base_correct
        else:
            p10, p01 = 0.03 + 0.15 * rng.random(), 0.03 + 0.15 * rng.random()
            u = rng.random(n)
            correct = np.where(base_correct, u >= p10, u < p01)
        # Log-likelihoods whose argmax is the gold option exactly when the item is correct.
        ll = -rng.gamma(2.0, 3.0, size=(n, N_CHOICES))
        winner = np.where(correct, gold, (gold + rng.integers(1, N_CHOICES, size=n)) % N_CHOICES)
        rows = np.arange(n)
        top = ll.argmax(axis=1)
        top_val, win_val = ll[rows, top].copy(), ll[rows, winner].copy()
        ll[rows, winner], ll[rows, top] = top_val, win_val
        greedy = rng.random((n, N_CHOICES)) < 0.1
        means[model] = float(correct.mean())
        path = Path(root) / model.replace("/", "__") / f"samples_{task}_{DATE_ID}.jsonl"
        lls = ll.tolist()
        flags = np.where(greedy, "True", "False").tolist()
        with path.open("w", buffering=1 << 22) as handle:
            out = []
            for i in range(n):
                row, fl = lls[i], flags[i]
                resps = (
                    f'[["{row[0]!r}", "{fl[0]}"], ["{row[1]!r}", "{fl[1]}"], '
                    f'["{row[2]!r}", "{fl[2]}"], ["{row[3]!r}", "{fl[3]}"]]'
                )
                out.append(
                    f'{heads[i]}{resps}], "filtered_resps": {resps}{tails[i]}'
                    f'{"1.0" if correct[i] else "0.0"}}}\n'
                )
                if len(out) >= 2000:
                    handle.write("".join(out))
                    out.clear()
            handle.write("".join(out))
    return means


def _write_results(args: argparse.Namespace, model: str, seed: int, means: dict[str, float]) -> None:
    """results_<date>.json in the shape tests/fakeruns.write_run writes (lm-eval 0.4.13)."""
    tasks = task_names(args.tasks)
    results: dict[str, dict[str, Any]] = {}
    for task in tasks:
        results[task] = {"alias": task, "acc,none": means[task], "acc_stderr,none": "N/A"}
    payload = {
        "results": results,
        "configs": {t: {"task": t, "output_type": "multiple_choice", "metadata": {"version": 1.0}} for t in tasks},
        "versions": {t: 1.0 for t in tasks},
        "n-samples": {t: {"original": args.items, "effective": args.items} for t in tasks},
        "config": {"model": "hf", "model_args": f"pretrained={model}", "random_seed": seed},
        "model_name": model,
        "lm_eval_version": "0.4.13",
    }
    (model_dir(args, model) / f"results_{DATE_ID}.json").write_text(json.dumps(payload, indent=2))


def _shape(value: Any) -> Any:
    """The nesting and JSON types of a value (first element of lists, keys of dicts)."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def check_format(args: argparse.Namespace) -> list[str]:
    """Differences in fields/shape between our files and tests/fakeruns.write_run's."""
    sys.path.insert(0, str(REPO / "tests"))
    from fakeruns import FakeTask, write_run

    problems = []
    task = task_names(args.tasks)[0]
    with tempfile.TemporaryDirectory() as tmp:
        ref_results = write_run(Path(tmp), BASE, [FakeTask(task, {"acc": [1.0, 0.0]})], seed=0, date_id=DATE_ID)
        ref_line = json.loads((ref_results.parent / f"samples_{task}_{DATE_ID}.jsonl").read_text().splitlines()[0])
        ref_res = json.loads(ref_results.read_text())
    ours_dir = model_dir(args, BASE)
    with (ours_dir / f"samples_{task}_{DATE_ID}.jsonl").open() as handle:
        line = json.loads(handle.readline())
    res = json.loads((ours_dir / f"results_{DATE_ID}.json").read_text())
    if list(line) != list(ref_line):
        problems.append(f"sample fields {list(line)} != fakeruns {list(ref_line)}")
    for key in ref_line:
        if key in ("doc", "arguments"):
            continue  # richer content here; checked below
        if key in line and _shape(line[key]) != _shape(ref_line[key]):
            problems.append(f"sample field {key}: shape {_shape(line[key])} != fakeruns {_shape(ref_line[key])}")
    if _shape(line["arguments"]["gen_args_0"]) != _shape(ref_line["arguments"]["gen_args_0"]):
        problems.append("arguments.gen_args_0 shape differs from fakeruns")
    if line["doc_hash"] != _sha(json.dumps(line["doc"], indent=2)):
        problems.append("doc_hash is not sha256(json.dumps(doc, indent=2)) as in fakeruns")
    if line["prompt_hash"] != _sha(line["arguments"]["gen_args_0"]["arg_0"]):
        problems.append("prompt_hash is not sha256 of the prompt")
    if list(res) != list(ref_res):
        problems.append(f"results keys {list(res)} != fakeruns {list(ref_res)}")
    for key in ("results", "configs", "n-samples"):
        if _shape(res[key][task]) != _shape(ref_res[key][task]):
            problems.append(f"results[{key!r}][task] shape differs from fakeruns")
    if _shape(res["config"]) != _shape(ref_res["config"]):
        problems.append("results['config'] shape differs from fakeruns")
    return problems


def phase_generate(args: argparse.Namespace) -> dict[str, Any]:
    from multiprocessing import get_context

    root = data_dir(args)
    if root.exists():
        shutil.rmtree(root)
    models = model_names(args.variants)
    for model in models:
        model_dir(args, model).mkdir(parents=True)
    tasks = task_names(args.tasks)
    jobs = [(t, i, args.items, args.variants, str(root)) for i, t in enumerate(tasks)]
    started = time.perf_counter()
    workers = max(1, min(os.cpu_count() or 1, len(jobs)))
    with get_context("fork").Pool(workers) as pool:
        per_task = pool.map(_write_task, jobs, chunksize=1)
    for model in models:  # one seed for all: base and variants are the same replicate
        _write_results(args, model, 0, {t: m[model] for t, m in zip(tasks, per_task, strict=True)})
    wall = time.perf_counter() - started
    problems = check_format(args)
    if problems:
        raise SystemExit("generated files do not match tests/fakeruns.py:\n  " + "\n  ".join(problems))
    (root / "manifest.json").write_text(json.dumps(manifest(args)))
    return {"records": len(models) * len(tasks) * args.items, "wall_s": wall, "format_check": "OK"}


# --------------------------------------------------------------------------------------------
# phase: floor

WARM_LIMIT = 8 << 30
"""Samples files up to this size are read once before the floor is timed (a cold first read made the floor look
twice as slow as the warm read ingest gets; larger data does not stay in the page cache for either)."""
CAPTRACK_MAX_OBJECT = 1073741824  # captrack.results.ingest_sql.LARGE_OBJECT_SIZE: the read after a line > 16 MiB
FLOOR_COLUMNS = {
    "doc_id": "BIGINT", "doc_hash": "VARCHAR", "prompt_hash": "VARCHAR", "filter": "VARCHAR",
    "acc": "JSON", "filtered_resps": "JSON",
}
# What ingest reads besides (captrack/results/ingest_sql.py): the gold and the doc's revision and options.
INGEST_COLUMNS = FLOOR_COLUMNS | {"target": "JSON", "doc": "STRUCT(revision VARCHAR, choices JSON)"}


def phase_floor(args: argparse.Namespace, max_object: int | None = None, minimal: bool = False) -> dict[str, Any]:
    """One read_json over every samples file, DuckDB's defaults (or the given maximum_object_size)."""
    import duckdb

    files = [str(p) for p in samples_files(args)]
    columns = FLOOR_COLUMNS if minimal else INGEST_COLUMNS
    struct = "{" + ", ".join(f"'{k}': '{v}'" for k, v in columns.items()) + "}"
    extra = f", maximum_object_size={max_object}" if max_object else ""
    more = "" if minimal else ", sum(length(target)), count(doc.revision), sum(json_array_length(doc.choices))"
    sql = f"""
        SELECT count(*), sum(doc_id), sum(length(doc_hash)), sum(length(prompt_hash)),
               count("filter"), sum(acc::DOUBLE), sum(json_array_length(filtered_resps)){more}
        FROM read_json(?, format='newline_delimited', columns={struct}{extra})"""
    con = duckdb.connect(":memory:")
    size = sum(os.path.getsize(f) for f in files)
    if size <= WARM_LIMIT:  # read once untimed: ingest, run after it, finds the files in the page cache too
        con.execute(sql, [files]).fetchone()
    started = time.perf_counter()
    row = con.execute(sql, [files]).fetchone()
    wall = time.perf_counter() - started
    threads = con.execute("SELECT current_setting('threads')").fetchone()
    con.close()
    assert row is not None
    return {
        "records": int(row[0]), "wall_s": wall, "files": len(files),
        "bytes": size, "warmed": size <= WARM_LIMIT, "threads": int(threads[0]) if threads else None,
    }


# --------------------------------------------------------------------------------------------
# phase: ingest


def store_path(args: argparse.Namespace) -> Path:
    return Path(args.workdir) / f"store-v{args.variants}-t{args.tasks}-i{args.items}.duckdb"


def phase_ingest(args: argparse.Namespace) -> dict[str, Any]:
    from captrack.labels import VariantLabels
    from captrack.results.runfiles import discover_runs
    from captrack.results.store import Store

    path = store_path(args)
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    per_model = {}
    started = time.perf_counter()
    with Store(path) as store:
        for model in model_names(args.variants):
            t0 = time.perf_counter()
            runs = discover_runs(model_dir(args, model))
            store.ingest(runs, VariantLabels(name=model, algorithm=algorithm_of(model)))
            per_model[model] = time.perf_counter() - t0
        rows = store.con.execute("SELECT count(*) FROM samples").fetchone()
        t_close = time.perf_counter()
    close_s = time.perf_counter() - t_close
    wall = time.perf_counter() - started
    return {
        "records": int(rows[0]) if rows else 0, "wall_s": wall, "per_model_s": per_model,
        "close_s": close_s, "store_mb": path.stat().st_size / 2**20,
    }


# --------------------------------------------------------------------------------------------
# phase: compare


def phase_compare(args: argparse.Namespace) -> dict[str, Any]:
    from captrack.analysis.comparison import CompareOptions
    from captrack.compare.use_case import compare
    from captrack.labels import VariantLabels
    from captrack.report.writer import write_comparison
    from captrack.results.store import Store
    from captrack.taxonomy import load_taxonomy

    taxonomy = load_taxonomy()
    variants = [VariantLabels(name=m, algorithm=algorithm_of(m)) for m in model_names(args.variants)[1:]]
    out = Path(args.workdir) / f"compare-v{args.variants}-t{args.tasks}-i{args.items}"
    if out.exists():
        shutil.rmtree(out)
    started = time.perf_counter()
    with Store(store_path(args), read_only=True) as store:  # as `captrack compare --store` opens it
        comparison = compare(store, BASE, variants, CompareOptions(bootstrap=args.bootstrap), taxonomy,
                             items_ahead=True)  # as the command asks: it writes the comparison next
        compared = time.perf_counter()
        written = write_comparison(comparison, out, inputs={}, taxonomy=taxonomy)
    done = time.perf_counter()
    paired = sum(sum(c["paired_items"].values()) for c in comparison.counts.values())
    return {
        "records": int(paired), "wall_s": done - started, "compare_store_s": compared - started,
        "write_s": done - compared, "files": len(written), "drift_rows": len(comparison.drift),
        "transition_rows": len(comparison.transitions), "warnings": len(comparison.warnings),
        "out": str(out),
    }


def phase_floor_write(args: argparse.Namespace) -> dict[str, Any]:
    """The floor's projection written to a fresh DuckDB file, one INSERT and transaction per run, then CHECKPOINT."""
    import duckdb

    path = Path(args.workdir) / "floor-write.duckdb"
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    struct = "{" + ", ".join(f"'{k}': '{v}'" for k, v in INGEST_COLUMNS.items()) + "}"
    select = f"""
        SELECT doc_id, doc_hash, prompt_hash, "filter", acc::DOUBLE AS acc,
               json_array_length(filtered_resps)::INTEGER AS k, target::VARCHAR AS target, doc.revision AS revision,
               json_array_length(doc.choices)::INTEGER AS n_choices
        FROM read_json(?, format='newline_delimited', columns={struct})"""
    runs = [[str(p) for p in samples_files(args) if p.parent == model_dir(args, m)] for m in model_names(args.variants)]
    con = duckdb.connect(str(path))
    # the cheapest settings found: no vacuum at the checkpoint (as a fresh ingest), the threads' order not kept
    con.execute("SET max_vacuum_tasks = 0; SET preserve_insertion_order = false")
    con.execute(f"CREATE TABLE rows AS {select} LIMIT 0", [runs[0][:1]])
    started = time.perf_counter()
    for files in runs:
        con.execute("BEGIN TRANSACTION")
        con.execute(f"INSERT INTO rows {select}", [files])
        con.execute("COMMIT")
    con.execute("CHECKPOINT")
    wall = time.perf_counter() - started
    row = con.execute("SELECT count(*) FROM rows").fetchone()
    con.close()
    size = path.stat().st_size
    path.unlink()
    return {"records": int(row[0]) if row else 0, "wall_s": wall, "runs": len(runs), "store_mb": size / 2**20}


def phase_floor_1g(args: argparse.Namespace) -> dict[str, Any]:
    """The floor query with the maximum_object_size (1 GiB) that captrack's ingest passes."""
    return phase_floor(args, max_object=CAPTRACK_MAX_OBJECT)


def phase_floor_min(args: argparse.Namespace) -> dict[str, Any]:
    """The floor query without target and doc (the projection used before issue 28)."""
    return phase_floor(args, minimal=True)


PHASES = {
    "generate": phase_generate, "floor": phase_floor, "floor-1g": phase_floor_1g, "floor-min": phase_floor_min,
    "floor-write": phase_floor_write, "ingest": phase_ingest, "compare": phase_compare,
}  # fmt: skip
INFO_PHASES = {"floor-1g", "floor-min", "floor-write"}  # no target of their own (floor-write: ingest's reference)


def run_phase_here(args: argparse.Namespace) -> None:
    """Child side: run one phase, add peak RSS, write the result as JSON."""
    from treerss import TreePeak

    result: dict[str, Any]
    with TreePeak() as tree:
        result = _run_phase(args)
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss is in KiB on Linux; children's is the largest single child. A phase whose work runs in worker
    # processes (compare of many variants) holds them all at once: the sampled sum over the process tree counts.
    result["rss_self_mb"] = self_kb / 1024
    result["rss_children_mb"] = children_kb / 1024
    result["rss_tree_mb"] = tree.peak_mb
    result["peak_rss_mb"] = max(self_kb / 1024, children_kb / 1024, tree.peak_mb)
    Path(args.result).write_text(json.dumps(result))


def _run_phase(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any]
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        result = profiler.runcall(PHASES[args.phase], args)
        stats_path = Path(args.workdir) / f"profile-{args.phase}.pstats"
        profiler.dump_stats(stats_path)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        result["profile"] = str(stats_path)
    else:
        result = PHASES[args.phase](args)
    return result


# --------------------------------------------------------------------------------------------
# driver


def spawn(args: argparse.Namespace, phase: str) -> dict[str, Any]:
    result = Path(args.workdir) / f"result-{phase}.json"
    result.unlink(missing_ok=True)
    cmd = [
        sys.executable, str(Path(__file__).resolve()), "--phase", phase, "--result", str(result),
        "--variants", str(args.variants), "--tasks", str(args.tasks), "--items", str(args.items),
        "--bootstrap", str(args.bootstrap), "--workdir", str(args.workdir),
    ]
    if args.profile:
        cmd.append("--profile")
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0 or not result.is_file():
        raise SystemExit(f"phase {phase} failed (exit status {proc.returncode})")
    data = json.loads(result.read_text())
    data["process_s"] = elapsed
    return data


def fmt_int(n: float | None) -> str:
    return "-" if n is None else f"{int(n):,}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=4, help="variants besides the base (default 4)")
    parser.add_argument("--tasks", type=int, default=50, help="tasks per run (default 50)")
    parser.add_argument("--items", type=int, default=5000, help="items per task (default 5000)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples in compare (default 1000)")
    parser.add_argument("--workdir", default="/tmp/captrack-bench", help="where data, store and outputs go")
    parser.add_argument("--regenerate", action="store_true", help="write the synthetic runs even if present")
    parser.add_argument("--profile", action="store_true", help="cProfile each phase (stats to the workdir)")
    parser.add_argument("--phases", default="floor,floor-min,floor-write,ingest,compare",
                        help="comma-separated phases to time (default floor,floor-min,floor-write,ingest,compare; "
                             "also floor-1g)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each timed phase N times, interleaved; report the fastest (default 1)")
    parser.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    if args.phase:
        run_phase_here(args)
        return 0

    import duckdb

    n_runs = args.variants + 1
    print(
        f"captrack analysis benchmark: base + {args.variants} variants x {args.tasks} tasks x "
        f"{args.items} items = {args.variants * args.tasks * args.items:,} variant records "
        f"(+ {args.tasks * args.items:,} base); bootstrap {args.bootstrap}; "
        f"{os.cpu_count()} CPUs; duckdb {duckdb.__version__}; Python {sys.version.split()[0]}",
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {}
    if generated_ok(args) and not args.regenerate:
        print(f"reusing the synthetic runs already in {data_dir(args)}", flush=True)
        results["generate"] = {"reused": True}
    else:
        print(f"generating synthetic lm-eval output in {data_dir(args)} ...", flush=True)
        results["generate"] = spawn(args, "generate")
    size = sum(p.stat().st_size for p in samples_files(args))
    n_files = len(samples_files(args))
    print(f"  {n_runs} runs, {n_files} samples files, {size / 2**30:.2f} GiB, "
          f"{size / (n_runs * args.tasks * args.items):.0f} bytes per line", flush=True)
    wanted = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = sorted(set(wanted) - set(PHASES) - {"generate"})
    if unknown:
        parser.error(f"unknown phase(s) {unknown}; choose from {sorted(PHASES)}")
    wanted = [p for p in wanted if p != "generate"]
    walls: dict[str, list[float]] = {}
    for attempt in range(max(1, args.repeat)):
        for phase in wanted:
            print(f"phase {phase}" + (f" (run {attempt + 1}/{args.repeat})" if args.repeat > 1 else "") + " ...", flush=True)
            r = spawn(args, phase)
            print(f"  {json.dumps(r)}", flush=True)
            walls.setdefault(phase, []).append(round(r["wall_s"], 2))
            best = results.get(phase)
            if best is None or r["wall_s"] < best["wall_s"]:
                r["peak_rss_mb"] = max(r["peak_rss_mb"], best["peak_rss_mb"]) if best else r["peak_rss_mb"]
                results[phase] = r
            else:
                best["peak_rss_mb"] = max(best["peak_rss_mb"], r["peak_rss_mb"])

    rows = []
    gen = results["generate"]
    if gen.get("reused"):
        rows.append(["generate", "-", "-", "-", "-", "(reused)", "-"])
    else:
        rows.append(["generate", fmt_int(gen["records"]), f"{gen['wall_s']:.1f}",
                     fmt_int(gen["records"] / gen["wall_s"]), f"{gen['peak_rss_mb']:.0f}", "-", "-"])
    floor = results.get("floor")
    for phase in wanted:
        r = results[phase]
        rss_ok = r["peak_rss_mb"] <= TARGET_RSS_MB
        misses = [] if rss_ok else ["RSS"]
        target = f"RSS <= {TARGET_RSS_MB / 1024:.0f} GB"
        if phase in INFO_PHASES:
            info = {"floor-1g": "(info: floor with maximum_object_size=1 GiB)",
                    "floor-min": "(info: floor without target and doc, as before issue 28)",
                    "floor-write": "(ingest's reference: DuckDB's own write of the floor's fields, one INSERT per run"
                                   + (f"; {r['wall_s'] / floor['wall_s']:.2f}x floor)" if floor else ")")}[phase]
            rows.append([phase, fmt_int(r["records"]), f"{r['wall_s']:.1f}", fmt_int(r["records"] / r["wall_s"]),
                         f"{r['peak_rss_mb']:.0f}", info, "-"])
            continue
        if phase == "ingest":
            write = results.get("floor-write")
            if write:
                limit = TARGET_INGEST_RATIO * write["wall_s"]
                target = (f"<= {TARGET_INGEST_RATIO:g}x floor-write ({limit:.1f} s; now {r['wall_s'] / write['wall_s']:.2f}x"
                          + (f"; {r['wall_s'] / floor['wall_s']:.2f}x floor" if floor else "") + "), " + target)
                if r["wall_s"] > limit:
                    misses.insert(0, "time")
            else:
                target = "(no floor-write measured), " + target
        elif phase == "compare":
            target = f"<= {TARGET_COMPARE_S:.0f} s, " + target
            if r["wall_s"] > TARGET_COMPARE_S:
                misses.insert(0, "time")
        verdict = "PASS" if not misses else "MISS (" + ", ".join(misses) + ")"
        rows.append([phase, fmt_int(r["records"]), f"{r['wall_s']:.1f}", fmt_int(r["records"] / r["wall_s"]),
                     f"{r['peak_rss_mb']:.0f}", target, verdict])
    header = ["phase", "records", "wall s", "records/s", "peak RSS MB", "target", "result"]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    print()
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(c).ljust(w) if i in (0, 5, 6) else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))))
    if args.repeat > 1:
        print("\nfastest of " + str(args.repeat) + " runs shown; all wall s: "
              + "; ".join(f"{p} {walls[p]}" for p in wanted))
    print(f"load average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])} "
          f"(other processes on the machine skew the timings)")
    if "compare" in results:
        c = results["compare"]
        print(f"\ncompare: compare_store {c['compare_store_s']:.1f} s + write_comparison {c['write_s']:.1f} s; "
              f"{c['files']} files in {c['out']}")
    if "ingest" in results:
        i = results["ingest"]
        print(f"ingest: store {i['store_mb']:.0f} MB; close/checkpoint {i['close_s']:.1f} s; per model: "
              + ", ".join(f"{m} {s:.1f} s" for m, s in i["per_model_s"].items()))
    print("RESULT " + json.dumps(result_line(args, results)))
    return 0


def result_line(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The machine-readable summary: variant records, floor, floor-write, ingest and compare seconds, ingest over
    each floor, the largest peak RSS of the phases with targets (floor-write, DuckDB alone writing, is no phase of
    captrack's)."""
    def wall(phase: str) -> float | None:
        return round(results[phase]["wall_s"], 2) if phase in results else None

    floor_s, write_s, ingest_s = wall("floor"), wall("floor-write"), wall("ingest")
    rss = [r["peak_rss_mb"] for p, r in results.items() if p != "generate" and p not in INFO_PHASES and "peak_rss_mb" in r]
    return {
        "records": args.variants * args.tasks * args.items, "floor_s": floor_s, "floor_write_s": write_s,
        "ingest_s": ingest_s, "ingest_over_floor": round(ingest_s / floor_s, 3) if floor_s and ingest_s else None,
        "ingest_over_floor_write": round(ingest_s / write_s, 3) if write_s and ingest_s else None,
        "compare_s": wall("compare"), "peak_rss_mb": round(max(rss), 1) if rss else None,
    }


if __name__ == "__main__":
    sys.exit(main())
