"""The work folder of `captrack run`: the one place its layout is spelled.

::

    <workdir>/
      runs/<checkpoint>/seed<N>/        one evaluation's lm-eval output folder (or one `captrack import`)
      runs/<checkpoint>/step-<S>/seed<N>/  a trajectory's evaluation of its checkpoint saved at training step S
      models/<variant>/                 a trained variant's weights
      cache/<checkpoint>[-step<S>]-seed<N>-<fp>  lm-eval's request cache of one evaluation (fp: the weights' fingerprint)
      data/                             the data mirror `data: {sources: ...}` builds
      markers/<stage>.json              each stage's marker (the hash of its inputs)
      jobs/<id>.json                    a stage job's spec (captrack.pipeline.jobs), what its worker runs
      jobs/<id>.report.json             what the worker says of its run (host, GPUs, times)
      jobs/<id>.record.json             the driver's record of the submitted job (executor, job id, state)
      logs/<stage>.log                  a worker's log
      store.duckdb                      the store ingest writes (rebuilt as store.tmp.duckdb, then renamed)
      .captrack-run.lock                held by the one `captrack run` working here
      leaderboard/                      the board of a `--quick` run (a full run writes the experiment's `leaderboard:`)

An experiment without ``workdir:`` works in ``runs/<experiment file's stem>`` beside its file
(:func:`default_workdir`); the embedded demo in ``runs/demo`` under the current folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["LOCK_NAME", "WorkFolder", "default_workdir"]

LOCK_NAME = ".captrack-run.lock"


def default_workdir(folder: Path, name: str) -> Path:
    """The work folder of experiment `name` when its file names none: ``<folder>/runs/<name>``."""
    return folder / "runs" / name


@dataclass(frozen=True)
class WorkFolder:
    """Every path of one work folder, by what it holds (see the module docstring for the tree)."""

    root: Path

    @property
    def runs(self) -> Path:
        """The folder of every evaluation's lm-eval output."""
        return self.root / "runs"

    def run(self, checkpoint: str, seed: int, step: int | None = None) -> Path:
        """The lm-eval output folder of one checkpoint evaluated (or imported) with one seed (at a training step)."""
        at = self.runs / checkpoint
        return (at if step is None else at / f"step-{step}") / f"seed{seed}"

    def model(self, variant: str) -> Path:
        """Where a trained variant's weights are saved."""
        return self.root / "models" / variant

    def request_cache(self, checkpoint: str, seed: int, fingerprint: str, step: int | None = None) -> Path:
        """lm-eval's request cache of one evaluation (its keys ignore the model, so one per weights)."""
        at = "" if step is None else f"-step{step}"
        return self.root / "cache" / f"{checkpoint}{at}-seed{seed}-{fingerprint}"

    @property
    def data(self) -> Path:
        """The data mirror built from the experiment's ``data.sources``."""
        return self.root / "data"

    @property
    def markers(self) -> Path:
        """The folder of the stage markers."""
        return self.root / "markers"

    def marker(self, name: str) -> Path:
        """The marker of stage `name` (e.g. ``ingest``, ``eval-sft-0``)."""
        return self.markers / f"{name}.json"

    @property
    def jobs(self) -> Path:
        """The folder of the stage jobs' specs, reports and records."""
        return self.root / "jobs"

    def job_spec(self, job: str) -> Path:
        """The spec of stage job `job` (its id), which its worker runs."""
        return self.jobs / f"{job}.json"

    @property
    def logs(self) -> Path:
        """The folder of the worker logs."""
        return self.root / "logs"

    def log(self, slug: str) -> Path:
        """The log of the worker that ran stage `slug`."""
        return self.logs / f"{slug}.log"

    @property
    def store(self) -> Path:
        """The store the ingest stage writes."""
        return self.root / "store.duckdb"

    @property
    def new_store(self) -> Path:
        """The store being rebuilt, renamed over :attr:`store` once verified."""
        return self.root / "store.tmp.duckdb"

    @property
    def lock(self) -> Path:
        """The lock file of the one `captrack run` working here."""
        return self.root / LOCK_NAME

    @property
    def quick_leaderboard(self) -> Path:
        """The leaderboard folder of a `--quick` run (kept inside its own work folder)."""
        return self.root / "leaderboard"
