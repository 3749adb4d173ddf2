"""`captrack plan-memory`: parameter counts match published sizes; fits follow the arithmetic."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from known_configs import LLAMA_3_70B, MIXTRAL_8X7B, QWEN3_NEXT_80B_A3B

from captrack.backends.memory_plan import GB, load_config, model_shape, parse_size, plan_memory
from captrack.cli import main
from captrack.errors import InputError


@pytest.mark.parametrize(("config", "billions", "full_attention"), [
    (LLAMA_3_70B, 70.55, 80), (MIXTRAL_8X7B, 46.70, 32), (QWEN3_NEXT_80B_A3B, 79.67, 12),
])
def test_parameter_counts_match_published_sizes(config: dict, billions: float, full_attention: int) -> None:
    shape = model_shape(config)
    assert shape.params / 1e9 == pytest.approx(billions, abs=0.01)
    assert shape.full_attention_layers == full_attention


def _by_mode(config: dict, gpus: int, gpu_mem: str = "80GB", **kwargs: int) -> dict:
    return {p.mode: p for p in plan_memory(config, gpus, parse_size(gpu_mem), **kwargs)}


def test_llama_70b_tp_on_8x80gb_fits_and_shards_all_but_the_embedding() -> None:
    plans = _by_mode(LLAMA_3_70B, 8)
    embed = 128256 * 8192 * 2
    assert plans["tp"].weights == pytest.approx((141.1 * GB - embed) / 8 + embed, rel=0.01)
    # 8 KV heads over 8 ranks: one head each, 80 layers, 8 x 4096 tokens, K and V, bf16
    assert plans["tp"].kv_cache == 2 * 80 * 1 * 128 * 8 * 4096 * 2
    assert plans["tp"].fits and plans["zero3"].fits
    assert plans["autotp"].host == 8 * plans["zero3+cpu"].host  # every rank loads the whole model first


def test_80b_models_on_one_gpu_fit_only_with_offload() -> None:
    for config in (LLAMA_3_70B, QWEN3_NEXT_80B_A3B):
        plans = _by_mode(config, 1)
        assert [m for m, p in plans.items() if p.fits] == ["zero3+cpu", "zero3+nvme"]
        assert plans["zero3+cpu"].host == model_shape(config).params * 2


def test_qwen3_next_tp_never_fits_and_says_why() -> None:
    plans = _by_mode(QWEN3_NEXT_80B_A3B, 8)
    assert not plans["tp"].fits and "use autotp" in plans["tp"].note
    assert plans["autotp"].fits
    # autotp leaves linear attention and the shared expert whole on every rank
    assert plans["autotp"].weights > plans["tp"].weights


def test_a_long_batch_can_stop_tp_from_fitting() -> None:
    assert not _by_mode(MIXTRAL_8X7B, 2, seq_len=32768)["tp"].fits
    assert _by_mode(MIXTRAL_8X7B, 2, seq_len=2048)["tp"].fits


def test_sizes_and_config_locations(tmp_path: Path) -> None:
    assert parse_size("80GB") == 80 * 10**9 and parse_size("24GiB") == 24 * 2**30 and parse_size("141 gb") == 141 * 10**9
    with pytest.raises(InputError, match="expected a size"):
        parse_size("eighty")
    (tmp_path / "config.json").write_text(json.dumps({"text_config": MIXTRAL_8X7B, "model_type": "llava"}))
    assert load_config(tmp_path) == load_config(tmp_path / "config.json") == MIXTRAL_8X7B
    with pytest.raises(InputError, match=r"no config\.json"):
        load_config(tmp_path / "missing")
    with pytest.raises(InputError, match="hidden_size"):
        model_shape({"model_type": "x", "vocab_size": 10, "num_hidden_layers": 2, "num_attention_heads": 2})


def test_cli_prints_every_mode_and_what_fits(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_3_70B))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan-memory", "--model", str(path), "--gpus", "1", "--gpu-mem", "80GB"]) == 0
    text = out.getvalue()
    assert "llama: 70.55B parameters = 141.1 GB in bfloat16" in text
    for mode in ("tp ", "autotp", "zero3 ", "zero3+cpu", "zero3+nvme"):
        assert mode in text
    fits, auto = text.strip().splitlines()[-2:]
    assert fits.endswith("fits: zero3+cpu, zero3+nvme")
    assert auto.startswith("mode=auto: mode=zero3 offload=cpu on 1 GPU(s)") and "141.1 GB needed" in auto
    assert main(["plan-memory", "--model", str(tmp_path / "nope")]) == 1
