"""A comparison's variants read by worker processes side by side, one contiguous part of them each.

Each worker is ``python -m captrack.compare.readers JOB OUT``: it opens the store read-only, reads
its variants exactly as a single process does (captrack.compare.pair_reads.read_pairs), computes each
pair's own part of the analysis (captrack.analysis.variant_part) and appends the pair to OUT (its
length, then its pickle) as soon as it is read, for the caller to unpickle while the workers go on; an
error it raises is sent the same way and raised again in the caller.
Workers are plain subprocesses started by captrack.processes.spawn (the floor `captrack run`'s stage workers
use too), so a caller's script is never re-imported (as multiprocessing's spawn would do), nothing of the
caller's DuckDB state is forked, and a worker dies with its caller, however the caller ends (kill -9 included).
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from captrack.analysis.comparison import CompareOptions
from captrack.analysis.types import PairInput
from captrack.errors import CaptrackError
from captrack.files import scratch_folder
from captrack.labels import VariantLabels
from captrack.processes import captrack_child_env, die_with_parent, spawn
from captrack.taxonomy import Taxonomy

__all__ = ["WORKER_MODULE", "read_in_workers"]

WORKER_MODULE = "captrack.compare.readers"
"""The module each worker runs (``python -m WORKER_MODULE JOB OUT``)."""


def read_in_workers(path: str, base: str, variants: Sequence[VariantLabels], options: CompareOptions,
                    taxonomy: Taxonomy, workers: int) -> Iterator[PairInput]:
    """The pairs of `variants` with `base` from the store file at `path`, read by `workers` processes, in order."""
    size, extra = divmod(len(variants), workers)
    bounds = [i * size + min(i, extra) for i in range(workers + 1)]
    parts = [list(variants[bounds[i]:bounds[i + 1]]) for i in range(workers) if bounds[i] < bounds[i + 1]]
    env = captrack_child_env()
    with tempfile.TemporaryDirectory(prefix="read-", dir=scratch_folder()) as tmp:
        started = []
        try:
            for i, part in enumerate(parts):
                job, out, log = (Path(tmp) / f"{name}{i}" for name in ("job", "out", "log"))
                job.write_bytes(pickle.dumps((path, base, part, options, taxonomy)))
                out.touch()  # read while the worker appends to it
                with log.open("wb") as handle:
                    started.append((spawn([sys.executable, "-m", WORKER_MODULE, str(job), str(out)],
                                          stdout=handle, stderr=handle, env=env), out, log))
            for process, out, log in started:
                yield from _pairs(process, out)  # each pair as soon as it is written: unpickled while the workers read
                if process.wait() != 0:
                    tail = log.read_text(errors="replace")[-2000:]
                    raise CaptrackError(f"a worker reading the comparison's variants failed (exit {process.returncode}); "
                                        f"its output ended:\n{tail}")
        finally:
            for process, _, _ in started:
                if process.poll() is None:
                    process.kill()
                    process.wait()


def _pairs(process: subprocess.Popen[bytes], out: Path) -> Iterator[PairInput]:
    """The pairs a worker writes into `out` (each a length and a pickle), read as they come until it exits;
    the error it stopped on (if any) is raised."""
    with out.open("rb") as handle:
        while True:
            head = _read(handle, 8, process)
            if len(head) < 8:
                return  # the worker is gone: its exit status says how it ended
            size = int.from_bytes(head, "little")
            body = _read(handle, size, process)
            if len(body) < size:
                return  # it died writing this pair: its exit status and output say why
            item = pickle.loads(body)
            if isinstance(item, BaseException):
                raise item
            yield item
            del item, body  # nor held while the next one is read and unpickled


def _read(handle: BinaryIO, size: int, process: subprocess.Popen[bytes]) -> bytes:
    """`size` bytes from `handle`, waiting while the worker writing it runs; fewer only once it has exited."""
    data = handle.read(size)
    while len(data) < size:
        done = process.poll() is not None  # checked before reading again: what it wrote before exiting is read
        data += handle.read(size - len(data))
        if done:
            break
        if len(data) < size:
            time.sleep(0.01)
    return data


def _send(handle: BinaryIO, item: object) -> None:
    body = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
    handle.write(len(body).to_bytes(8, "little") + body)
    handle.flush()


def _work(job: Path, out: Path) -> None:
    from captrack.analysis.bootstrap import shared_resamples
    from captrack.analysis.comparison import part_options
    from captrack.analysis.variant_part import variant_part
    from captrack.compare.pair_reads import read_pairs
    from captrack.compare.texts import BaseTexts
    from captrack.results.store import Store

    path, base, variants, options, taxonomy = pickle.loads(job.read_bytes())
    with out.open("wb") as handle:
        try:
            with Store(path, read_only=True) as store, shared_resamples():
                store.use_threads(1)  # the workers share the cores between them
                sent: set[tuple[tuple[str, str], int]] = set()
                for pair in read_pairs(store, base, variants, options, taxonomy, BaseTexts(store.samples_files(base))):
                    pair.part = variant_part(pair, part_options(options))  # what analyse needs of this pair alone
                    pair.churn_answers = None  # counted into the part: not sent back
                    pair.item_texts = _not_sent(pair.item_texts, sent)
                    _send(handle, pair)
                    del pair  # not held while the next variant is read
        except CaptrackError as exc:  # what the caller reports as it would report it read in one process
            _send(handle, exc)

def _not_sent(texts: dict[tuple[str, str], dict[int, Any]], sent: set[tuple[tuple[str, str], int]]
              ) -> dict[tuple[str, str], dict[int, Any]]:
    """A pair's drill-down texts less those this worker sent with an earlier pair (the base's items, flipped by many
    variants): the caller merges every pair's texts into one mapping (Comparison.item_texts), in the order sent."""
    out = {key: {doc: text for doc, text in found.items() if (key, doc) not in sent} for key, found in texts.items()}
    sent.update((key, doc) for key, found in out.items() for doc in found)
    return out


if __name__ == "__main__":
    die_with_parent()
    _work(Path(sys.argv[1]), Path(sys.argv[2]))
