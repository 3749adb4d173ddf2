"""A comparison's variants read by worker processes side by side, one contiguous part of them each.

Each worker is ``python -m captrack.compare.readers JOB OUT``: it opens the store read-only, reads
its variants exactly as a single process does (captrack.compare.pair_reads.read_pairs), computes each
pair's own part of the analysis (captrack.analysis.variant_part) and pickles the pair into OUT as it is
read; an error it raises is pickled there too and raised again in the caller.
Workers are plain subprocesses, so a caller's script is never re-imported (as multiprocessing's
spawn would do) and nothing of the caller's DuckDB state is forked.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from captrack.analysis.compare import CompareOptions
from captrack.analysis.types import PairInput, VariantSpec
from captrack.errors import CaptrackError
from captrack.taxonomy import Taxonomy

__all__ = ["read_in_workers"]


def read_in_workers(path: str, base: str, variants: Sequence[VariantSpec], options: CompareOptions,
                    taxonomy: Taxonomy, workers: int) -> Iterator[PairInput]:
    """The pairs of `variants` with `base` from the store file at `path`, read by `workers` processes, in order."""
    size, extra = divmod(len(variants), workers)
    bounds = [i * size + min(i, extra) for i in range(workers + 1)]
    parts = [list(variants[bounds[i]:bounds[i + 1]]) for i in range(workers) if bounds[i] < bounds[i + 1]]
    package = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH", "")) if p)}
    with tempfile.TemporaryDirectory(prefix="captrack-read-") as tmp:
        started = []
        try:
            for i, part in enumerate(parts):
                job, out, log = (Path(tmp) / f"{name}{i}" for name in ("job", "out", "log"))
                job.write_bytes(pickle.dumps((path, base, part, options, taxonomy)))
                with log.open("wb") as handle:
                    started.append((subprocess.Popen([sys.executable, "-m", "captrack.compare.readers", str(job), str(out)],
                                                     stdin=subprocess.DEVNULL, stdout=handle, stderr=handle, env=env),
                                    out, log))
            for process, out, log in started:
                process.wait()
                yield from _pairs(out)
                if process.returncode != 0:
                    tail = log.read_text(errors="replace")[-2000:]
                    raise CaptrackError(f"a worker reading the comparison's variants failed (exit {process.returncode}); "
                                        f"its output ended:\n{tail}")
        finally:
            for process, _, _ in started:
                if process.poll() is None:
                    process.kill()
                    process.wait()


def _pairs(out: Path) -> Iterator[PairInput]:
    """The pairs a worker pickled into `out`, raising the error it stopped on (if any)."""
    if not out.exists():
        return
    with out.open("rb") as handle:
        while True:
            try:
                item = pickle.load(handle)
            except EOFError:
                return
            if isinstance(item, BaseException):
                raise item
            yield item


def _work(job: Path, out: Path) -> None:
    from captrack.analysis.bootstrap import shared_resamples
    from captrack.analysis.compare import part_options
    from captrack.analysis.variant_part import variant_part
    from captrack.compare.pair_reads import read_pairs
    from captrack.compare.texts import BaseTexts
    from captrack.results.store import Store

    path, base, variants, options, taxonomy = pickle.loads(job.read_bytes())
    with out.open("wb") as handle, Store(path, read_only=True) as store, shared_resamples():
        store.use_threads(1)  # the workers share the cores between them
        try:
            for pair in read_pairs(store, base, variants, options, taxonomy, BaseTexts(store.samples_files(base))):
                pair.part = variant_part(pair, part_options(options))  # what analyse needs of this pair alone
                pair.churn_answers = None  # counted into the part: not sent back
                pickle.dump(pair, handle, protocol=pickle.HIGHEST_PROTOCOL)
        except CaptrackError as exc:  # what the caller reports as it would report it read in one process
            pickle.dump(exc, handle, protocol=pickle.HIGHEST_PROTOCOL)


if __name__ == "__main__":
    _work(Path(sys.argv[1]), Path(sys.argv[2]))
