"""captrack-ds options, launch handling and the combinations it refuses (no model is loaded here)."""

from __future__ import annotations

import os
import re

import pytest

from captrack.backends import BACKENDS, register_backends
from captrack.backends.launch import ensure_process_env, ranks, strip_local_rank
from captrack.backends.options import (
    DSOptions,
    UnsupportedCombinationError,
    check_combination,
    parse_options,
)
from captrack.errors import InputError

LLAMA = {"model_type": "llama"}
MIXTRAL = {"model_type": "mixtral", "num_local_experts": 8}
QWEN3_MOE = {"model_type": "qwen3_moe", "num_experts": 128}
QWEN3_NEXT = {"model_type": "qwen3_next", "num_experts": 512}


def _check(options: DSOptions, config: dict, world: int = 8, transformers: str = "4.57.6",
           accelerator: str = "cuda", libaio: bool = True) -> None:
    check_combination(options, config, world, transformers, accelerator, libaio)


def test_model_args_are_parsed_and_the_rest_left_for_hflm() -> None:
    kwargs = {"mode": "zero3", "offload": "cpu", "dtype": "bf16", "max_length": "2048"}
    assert parse_options(kwargs) == DSOptions(mode="zero3", dtype="bf16", offload="cpu")
    assert kwargs == {"max_length": "2048"}
    assert parse_options({}) == DSOptions(mode="auto")
    assert parse_options({"offload": "cpu"}).mode == "zero3" and parse_options({"kernel_inject": "1"}).mode == "tp"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mode": "pipeline"}, "expected one of auto, tp, autotp, zero3"),
    ({"mode": "tp", "offload": "cpu"}, "offload=cpu needs mode=zero3"),
    ({"mode": "zero3", "offload": "nvme"}, "needs nvme_path"),
    ({"mode": "zero3", "kernel_inject": "true"}, "kernel_inject=true is a mode=tp option"),
    ({"kernel_inject": "maybe"}, "expected true or false"),
])
def test_bad_model_args_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_options(kwargs)


def test_qwen3_next_is_refused_under_tp_and_pointed_to_autotp() -> None:
    with pytest.raises(UnsupportedCombinationError, match="Use mode=autotp"):
        _check(DSOptions(mode="tp"), QWEN3_NEXT, world=1)
    _check(DSOptions(mode="autotp"), QWEN3_NEXT)
    _check(DSOptions(mode="zero3"), QWEN3_NEXT)


@pytest.mark.parametrize("config", [MIXTRAL, QWEN3_MOE])
@pytest.mark.parametrize("mode", ["tp", "autotp"])
def test_moe_tensor_parallel_is_refused_on_transformers_5(config: dict, mode: str) -> None:
    with pytest.raises(UnsupportedCombinationError, match=re.escape("Use mode=zero3, or install 'transformers>=4.57,<5'")):
        _check(DSOptions(mode=mode), config, transformers="5.0.0")
    _check(DSOptions(mode=mode), config, transformers="4.57.6")  # experts are nn.Linear lists there
    _check(DSOptions(mode=mode), config, world=1, transformers="5.0.0")  # nothing is sharded
    _check(DSOptions(mode="zero3"), config, transformers="5.0.0")
    _check(DSOptions(mode=mode), LLAMA, transformers="5.0.0")


def test_kernel_injection_is_refused_off_cuda_and_for_families_without_kernels() -> None:
    inject = DSOptions(mode="tp", kernel_inject=True)
    with pytest.raises(UnsupportedCombinationError, match="needs a CUDA device"):
        _check(inject, LLAMA, accelerator="cpu")
    with pytest.raises(UnsupportedCombinationError, match=r"no inference kernels for 'mixtral'.*drop kernel_inject"):
        _check(inject, MIXTRAL)
    _check(inject, LLAMA)


def test_nvme_offload_without_libaio_is_refused() -> None:
    nvme = DSOptions(mode="zero3", offload="nvme", nvme_path="/nvme")
    with pytest.raises(UnsupportedCombinationError, match=r"apt-get install libaio-dev.*or use offload=cpu"):
        _check(nvme, LLAMA, libaio=False)
    _check(nvme, LLAMA, libaio=True)


def test_deepspeed_launchers_local_rank_flag_is_taken_off_argv() -> None:
    env: dict[str, str] = {}
    argv = ["--model", "captrack-ds", "--local_rank=3", "--tasks", "x"]
    assert strip_local_rank(argv, env) == ["--model", "captrack-ds", "--tasks", "x"]
    assert env == {"LOCAL_RANK": "3"}
    env = {"LOCAL_RANK": "1"}
    assert strip_local_rank(["--local_rank", "5", "--limit", "2"], env) == ["--limit", "2"]
    assert env["LOCAL_RANK"] == "1"  # the launcher's environment wins over the flag


def test_process_env_is_completed_for_plain_runs_and_torchrun() -> None:
    plain: dict[str, str] = {}
    assert ensure_process_env(plain).world == 1
    assert plain["RANK"] == plain["LOCAL_RANK"] == "0" and plain["LOCAL_SIZE"] == "1" and plain["MASTER_PORT"]
    torchrun = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
                "MASTER_ADDR": "node0", "MASTER_PORT": "29500"}
    launch = ensure_process_env(torchrun)
    assert torchrun["LOCAL_SIZE"] == "2" and torchrun["MASTER_ADDR"] == "node0"
    assert (launch.rank, launch.local_rank, launch.world, launch.local_world) == (3, 1, 4, 2)
    assert ranks({"WORLD_SIZE": "2", "LOCAL_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1"}).local_world == 2


def test_backend_name_resolves_in_lm_evals_registry() -> None:
    from lm_eval.api.registry import get_model
    from lm_eval.models.huggingface import HFLM

    assert register_backends() == list(BACKENDS) == ["captrack-ds", "captrack-hf", "captrack-replay"]
    assert register_backends() == ["captrack-ds", "captrack-hf", "captrack-replay"]  # idempotent
    cls = get_model("captrack-ds")
    assert issubclass(cls, HFLM) and cls.__name__ == "DeepSpeedLM"
    assert register_backends() == ["captrack-ds", "captrack-hf", "captrack-replay"]  # also once the class is materialised


def test_on_a_second_node_only_global_rank_zero_passes_lm_evals_writer_test(monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.backends.deepspeed_lm import _only_global_rank_zero_writes
    from captrack.backends.launch import Ranks

    monkeypatch.setenv("LOCAL_RANK", "0")
    _only_global_rank_zero_writes(Ranks(rank=0, local_rank=0, world=16, local_world=8))
    assert os.environ["LOCAL_RANK"] == "0"
    _only_global_rank_zero_writes(Ranks(rank=8, local_rank=0, world=16, local_world=8))  # node 2, first GPU
    assert os.environ["LOCAL_RANK"] == "8"
