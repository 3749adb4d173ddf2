"""Offline preparation (``captrack run EXPERIMENT --prepare``) and the check that an offline run needs none.

Compute nodes often have no network. What a stage job would fetch from the Hugging Face hub is:

- a checkpoint's ``pretrained`` (or ``tokenizer``) given as a hub id (not a folder, not a captrack model alias, which is
  converted from its pip package on the node), unless it is in the Hugging Face cache;
- an official CapTrack task's data, unless a mirror (``data:``, CAPTRACK_DATA_DIR) or the cache holds it
  (captrack.lmeval.preflight.missing_data; captrack's probes generate their items and need nothing).

:func:`prepare` fetches those on this host into the Hugging Face cache (``HF_HOME``, which the jobs must read: a shared
file system) and builds every task once (lm-eval's datasets cache). :func:`check_prepared` runs before any job is
submitted when the hub is offline here (``HF_HUB_OFFLINE=1``, which the jobs inherit): one line naming what is
missing and the ``--prepare`` that fetches it, nothing submitted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from captrack.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

    from captrack.pipeline.experiment import Experiment

__all__ = ["check_prepared", "hub_models", "missing_offline", "names_hub_model", "prepare"]


def hub_models(experiment: Experiment) -> list[tuple[str, str]]:
    """(checkpoint, hub id) of every model or tokenizer a stage would load from the hub by its id."""
    from captrack.models import KNOWN_ALIASES

    found = []
    for checkpoint in [*experiment.bases, *experiment.variants]:
        if checkpoint.train or checkpoint.source or checkpoint.steps:  # trained by the run, imported, or saved folders
            continue
        for key in ("pretrained", "tokenizer"):
            value = checkpoint.model_args.get(key)
            if not isinstance(value, str) or Path(value).expanduser().exists() or value.strip().lower() in KNOWN_ALIASES:
                continue
            if not _is_repo_id(value):  # a folder that is not there (named by its own error later), not a hub id
                continue
            if (checkpoint.name, value) not in found:
                found.append((checkpoint.name, value))
    return found


def _is_repo_id(value: str) -> bool:
    """Whether `value` could name a hub repository (`name` or `org/name`); `/abs/path`, `./x`, `a/b/c` cannot."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if value.startswith(("/", "~", ".")):
        return False
    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def names_hub_model(value: str) -> bool:
    """Whether `value`, not a folder here, names a model on the Hugging Face hub: ``org/name``, or a bare ``name``
    already in the Hugging Face cache (a bare word that is neither is more likely a mistyped folder)."""
    return _is_repo_id(value) and ("/" in value or _in_cache(value))


def _in_cache(repo: str) -> bool:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        snapshot_download(repo, local_files_only=True)
    except (LocalEntryNotFoundError, ValueError, OSError):
        return False
    return True


def _official_tasks_missing(experiment: Experiment) -> list[str]:
    from captrack.lmeval.evaluate import match_tasks
    from captrack.lmeval.preflight import missing_data

    if experiment.data_sources or experiment.data_dir or all(str(t).startswith("captrack_probe") for t in experiment.tasks):
        return []  # a mirror the run builds or names; probes generate their items (no task index to build)
    manager, names = match_tasks(list(experiment.tasks), experiment.metadata)
    return missing_data(manager, names, experiment.metadata)


def missing_offline(experiment: Experiment) -> list[str]:
    """What `experiment`'s jobs would need the network for, each as a phrase naming it (empty: nothing)."""
    missing = [f"model {repo!r} of checkpoint {name!r} (not in the Hugging Face cache)"
               for name, repo in hub_models(experiment) if not _in_cache(repo)]
    tasks = _official_tasks_missing(experiment)
    if tasks:
        missing.append(f"the data of task(s) {', '.join(tasks)} (no mirror, not in the Hugging Face cache)")
    return missing


def check_prepared(experiment: Experiment) -> None:
    """When the hub is offline here (``HF_HUB_OFFLINE=1``, which the jobs inherit), refuse an experiment whose jobs would
    need the network, before anything is submitted.

    Raises:
        InputError: one line naming each missing model and task data and the ``--prepare`` that fetches them.
    """
    from captrack.official.hub import hub_offline

    if not hub_offline():
        return
    missing = missing_offline(experiment)
    if missing:
        raise InputError(f"{experiment.source}: the hub is offline (HF_HUB_OFFLINE=1) and the jobs would need "
                         f"{'; '.join(missing)}: run `captrack run {experiment.source} --prepare` on a host with network "
                         "(it fills the Hugging Face cache, HF_HOME, which the jobs must read); nothing was submitted")


def prepare(experiment: Experiment, console: Console) -> None:
    """Fetch every hub model and tokenizer the jobs load by id into the Hugging Face cache, and build every task once
    (its data into lm-eval's datasets cache); then check that nothing is left for the network.

    Raises:
        InputError: something could not be fetched (the hub unreachable or offline here), named.
    """
    from huggingface_hub import snapshot_download

    for name, repo in hub_models(experiment):
        try:
            path = snapshot_download(repo)
        except Exception as exc:  # any failure of the hub, said in one line
            raise InputError(f"{experiment.source}: --prepare could not fetch model {repo!r} of checkpoint {name!r}: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
        console.print(f"prepared: model {repo} ({name}) in {path}", highlight=False, markup=False)
    tasks = _build_tasks(experiment)
    console.print(f"prepared: {len(tasks)} task(s) built here: {', '.join(tasks)}", highlight=False, markup=False)
    missing = missing_offline(experiment)
    if missing:
        raise InputError(f"{experiment.source}: --prepare left {'; '.join(missing)}; see `captrack data --help` for the "
                         "official data's mirror")
    console.print("prepared: the jobs need no network (run with HF_HUB_OFFLINE=1 and the same HF_HOME)",
                  highlight=False, markup=False)


def _build_tasks(experiment: Experiment) -> list[str]:
    """Every selected task built once by lm-eval (its documents read or generated): its data cached on this host."""
    from captrack.lmeval.evaluate import match_tasks

    manager, names = match_tasks(list(experiment.tasks), experiment.metadata)
    built: dict[str, Any] = manager.load(names)["tasks"]
    return sorted(str(name) for name in built)
