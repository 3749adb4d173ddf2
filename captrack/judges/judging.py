"""`captrack judge`: judge the logged responses of lm-eval runs and write the verdicts beside them.

For every task of a run that has judged metrics (captrack.judges.catalog), each logged response is
put to the judge through the metric's prompt file; identical inputs are asked once, cached replies
are never asked again, and the rest go out with bounded concurrency under the request budget. The
verdicts go to ``judged_<task>_<date>.jsonl`` next to the samples file (written atomically), which
``captrack ingest`` and ``captrack compare`` read as extra metrics. Every row names its judge. A pass
that fails never overwrites earlier valid verdicts (captrack.judges.merge), and an empty reply is a
NaN (``empty_reply``) that is not cached.
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.errors import CaptrackError, InputError
from captrack.files import write_atomic
from captrack.judges.base import Judge, JudgeError, Message
from captrack.judges.cache import JudgeCache, cache_key
from captrack.judges.catalog import JudgedMetric, Sample, get_inputs, judged_for_task
from captrack.judges.merge import merge_verdicts
from captrack.judges.prompts import load_prompt
from captrack.judges.reply_parsing import Verdict, failed
from captrack.judges.retry import Budget, ask
from captrack.results.runfiles import Run, TaskInfo, discover_runs, judged_path

__all__ = ["JudgeReport", "Tally", "judge_runs", "read_samples"]


@dataclass
class Tally:
    """Verdict counts of one (run, task, metric)."""

    run: str
    model: str
    task: str
    metric: str
    n: int = 0
    scored: int = 0  # valid verdicts of this pass (cache hits included)
    reasons: Counter[str] = field(default_factory=Counter)  # NaN reasons of this pass, by code
    kept: int = 0  # earlier valid verdicts kept in place of this pass's NaNs (captrack.judges.merge)


@dataclass
class JudgeReport:
    """What a `judge_runs` call did: tallies, requests sent, cache hits, files written and files left as they were."""

    judge: str
    tallies: list[Tally] = field(default_factory=list)
    requests: int = 0
    cache_hits: int = 0
    unique_inputs: int = 0
    written: list[Path] = field(default_factory=list)
    kept_files: list[Path] = field(default_factory=list)  # this pass judged nothing: earlier verdicts left untouched

    @property
    def scored(self) -> int:
        """Valid verdicts of this pass, all tasks together."""
        return sum(t.scored for t in self.tallies)

    @property
    def failed(self) -> int:
        """NaN verdicts of this pass, all tasks together."""
        return sum(t.n - t.scored for t in self.tallies)


@dataclass
class _Job:
    messages: list[Message]
    prompt: str
    reply: str | None = None
    error: Verdict | None = None


def read_samples(task: TaskInfo) -> list[Sample]:
    """The logged lines of one task as Samples (generated text and prompt included).

    Raises:
        InputError: a line that is not JSON or lacks doc_id / doc_hash (file and line named).
    """
    samples = []
    with task.samples.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                samples.append(_sample(task.name, raw))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise InputError(f"{task.samples}, line {number}: not an lm-eval sample line ({exc}); "
                                 "re-run the evaluation with --log_samples") from exc
    return samples


def _first_text(value: Any) -> str:
    """The first string inside lm-eval's (possibly nested) response lists; empty when there is none."""
    while isinstance(value, list):
        value = value[0] if value else ""
    return "" if value is None else str(value)


def _sample(task: str, raw: dict[str, Any]) -> Sample:
    # The judge reads what the model wrote (resps), not a filter's extraction (filtered_resps, e.g. a
    # regex-extracted number); every filter's line gets the same verdict, asked once.
    response = _first_text(raw.get("resps")) or _first_text(raw.get("filtered_resps"))
    args = raw.get("arguments") or {}
    first: Any = next(iter(args.values()), {}) if isinstance(args, dict) else {}
    context = first.get("arg_0", "") if isinstance(first, dict) else ""
    return Sample(task=task, doc_id=int(raw["doc_id"]), doc_hash=str(raw["doc_hash"]), prompt_hash=str(raw.get("prompt_hash", "")),
                  filter=str(raw.get("filter", "none")), doc=dict(raw.get("doc") or {}), response=response,
                  context=str(context))


def judge_runs(
    paths: Iterable[str | Path], judge: Judge, cache: JudgeCache, budget: Budget | None = None,
    tasks: Sequence[str] = (), progress: bool = False,
) -> JudgeReport:
    """Judge every judged metric of every run under `paths` and write the verdict files.

    Args:
        tasks: glob patterns restricting the tasks judged (default: all with judged metrics).

    Raises:
        InputError: unreadable runs or samples; CaptrackError: a judged metric lm-eval also logs.
    """
    budget = budget or Budget()
    report = JudgeReport(judge.id)
    work: list[tuple[Run, TaskInfo, list[tuple[Sample, JudgedMetric, str]]]] = []
    jobs: dict[str, _Job] = {}
    for run in (r for p in paths for r in discover_runs(p)):
        for task in run.tasks:
            specs = judged_for_task(task.name)
            if not specs or (tasks and not any(fnmatch.fnmatchcase(task.name, g) for g in tasks)):
                continue
            _check_not_logged(task, specs)
            items = []
            for sample in read_samples(task):
                for spec in specs:
                    prompt = load_prompt(spec.prompt)
                    messages = prompt.render(get_inputs(spec.inputs)(sample))
                    key = cache_key(judge.id, judge.settings(), prompt.ref, messages)
                    jobs.setdefault(key, _Job(messages, prompt.ref))
                    items.append((sample, spec, key))
            work.append((run, task, items))
    report.unique_inputs = len(jobs)
    _answer(jobs, judge, cache, budget, report, progress)
    report.requests = budget.used
    for run, task, items in work:
        _write_verdicts(run, task, items, jobs, judge, report)
    return report


def _check_not_logged(task: TaskInfo, specs: list[JudgedMetric]) -> None:
    logged = {m for m, _ in task.metrics}
    clash = sorted(logged & {s.metric for s in specs})
    if clash:
        raise CaptrackError(
            f"task {task.name}: metric(s) {clash} are logged by lm-eval and also declared as judged; give the "
            "judged metric its own name in captrack/judges/catalog.py"
        )


def _answer(jobs: dict[str, _Job], judge: Judge, cache: JudgeCache, budget: Budget, report: JudgeReport, progress: bool) -> None:
    """Fill every job's reply from the cache or the judge (bounded concurrency); empty replies are not cached."""
    missing = []
    for key, job in jobs.items():
        job.reply = cache.get(key)  # None also for a blank reply an earlier captrack cached: asked again
        if job.reply is None:
            missing.append(key)
    report.cache_hits = len(jobs) - len(missing)
    if not missing:
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), disable=not progress, transient=True) as bar, ThreadPoolExecutor(max_workers=judge.concurrency) as pool:
        tracker = bar.add_task(f"judging with {judge.id}", total=len(missing))
        futures = {pool.submit(ask, judge, jobs[key].messages, budget): key for key in missing}
        for future in as_completed(futures):
            key = futures[future]
            job = jobs[key]
            try:
                reply = future.result()
            except JudgeError as exc:
                job.error = failed(exc.code, exc.detail)
            else:
                job.reply = reply
                if reply.strip():
                    cache.put(key, judge.id, job.prompt, reply)
                else:  # not cached, so the next run asks again
                    job.error = failed("empty_reply", "the judge returned no text")
            bar.advance(tracker)


def _write_verdicts(
    run: Run, task: TaskInfo, items: list[tuple[Sample, JudgedMetric, str]], jobs: dict[str, _Job],
    judge: Judge, report: JudgeReport,
) -> None:
    """Write one task's verdicts, merged with the file already there (a NaN never replaces a valid verdict)."""
    tallies: dict[str, Tally] = {}
    rows = []
    for sample, spec, key in items:
        job = jobs[key]
        verdict = job.error if job.error is not None else spec.parser.parse(job.reply or "")
        tally = tallies.setdefault(spec.metric, Tally(run.run_id, run.model_name, task.name, spec.metric))
        tally.n += 1
        if verdict.ok:
            tally.scored += 1
        else:
            tally.reasons[verdict.code] += 1
        rows.append({
            "doc_id": sample.doc_id, "doc_hash": sample.doc_hash, "prompt_hash": sample.prompt_hash,
            "filter": sample.filter, "metric": spec.metric, "value": verdict.value if verdict.ok else None,
            "judge": judge.id, "prompt": job.prompt, "reason": verdict.reason, "rule": verdict.rule,
            "reply": (job.reply or "")[:500], "input": key,
        })
    path = judged_path(task.samples)
    merged = merge_verdicts(path, rows)
    for row in merged.kept:
        if row.get("metric") in tallies:
            tallies[row["metric"]].kept += 1
    report.tallies += list(tallies.values())
    if merged.rows is None:
        report.kept_files.append(path)
    else:
        report.written.append(write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged.rows)))
