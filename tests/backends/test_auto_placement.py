"""`mode=auto` picks the cheapest placement that fits, against the planner with fake device memory."""

from __future__ import annotations

import pytest
from known_configs import LLAMA_3_70B, QWEN3_NEXT_80B_A3B, SMOLLM2_135M

from captrack.backends.auto_placement import Placement, choose_placement, zero3_warning
from captrack.backends.deepspeed_lm import resolve_auto
from captrack.backends.memory_plan import GB
from captrack.backends.options import DSOptions, UnsupportedCombinationError
from captrack.errors import InputError

H100 = 80 * GB
HOST = 1000 * GB  # a node with 1 TB of RAM free


def _choose(config: dict, gpus: int, host: int = HOST, **kwargs: object) -> Placement:
    return choose_placement(config, [H100] * gpus, host, **kwargs)  # type: ignore[arg-type]


def test_smollm2_on_one_80gb_gpu_runs_plain_per_rank_weights() -> None:
    chosen = _choose(SMOLLM2_135M, 1)
    assert (chosen.mode, chosen.offload, chosen.gpus) == ("tp", "none", 1)
    assert "fits one GPU" in chosen.reason


def test_a_model_that_fits_one_gpu_stays_on_one_of_eight() -> None:
    assert (_choose(SMOLLM2_135M, 8).mode, _choose(SMOLLM2_135M, 8).gpus) == ("tp", 1)


def test_llama_70b_on_8x80gb_is_tensor_parallel_across_the_node() -> None:
    chosen = _choose(LLAMA_3_70B, 8)
    assert (chosen.mode, chosen.offload, chosen.gpus) == ("tp", "none", 8)
    assert "tensor parallel across the node's 8 GPUs" in chosen.reason


def test_llama_70b_on_one_80gb_gpu_offloads_to_cpu_then_nvme() -> None:
    chosen = _choose(LLAMA_3_70B, 1)
    assert (chosen.mode, chosen.offload, chosen.gpus) == ("zero3", "cpu", 1)
    little_ram = 64 * GB  # the 141 GB of bf16 weights do not fit in host RAM either
    chosen = _choose(LLAMA_3_70B, 1, host=little_ram, nvme_path="/nvme")
    assert (chosen.mode, chosen.offload) == ("zero3", "nvme") and "/nvme" in chosen.reason
    with pytest.raises(InputError, match="offload=nvme,nvme_path"):
        _choose(LLAMA_3_70B, 1, host=little_ram)


def test_qwen3_next_80b_on_4x80gb_uses_autotp_never_tp() -> None:
    chosen = _choose(QWEN3_NEXT_80B_A3B, 4)
    assert (chosen.mode, chosen.offload, chosen.gpus) == ("autotp", "none", 4)


def test_on_cpu_it_chooses_the_plain_path() -> None:
    chosen = choose_placement(LLAMA_3_70B, [], HOST)
    assert (chosen.mode, chosen.offload, chosen.gpus) == ("tp", "none", 1) and "no GPU" in chosen.reason
    assert choose_placement(QWEN3_NEXT_80B_A3B, [], HOST).mode == "autotp"  # tp is refused for it


def test_zero3_is_never_chosen_where_tp_fits_and_asking_for_it_warns() -> None:
    for config, gpus in ((SMOLLM2_135M, 1), (LLAMA_3_70B, 8), (QWEN3_NEXT_80B_A3B, 4)):
        assert _choose(config, gpus).mode != "zero3"
    warning = zero3_warning(LLAMA_3_70B, [H100] * 8)
    assert warning is not None and "0.25-0.28x" in warning and "mode=tp on 8 GPU(s)" in warning
    assert zero3_warning(LLAMA_3_70B, [H100]) is None  # nothing but ZeRO-3 offload fits one GPU
    assert zero3_warning(SMOLLM2_135M, []) is None  # CPU


def test_auto_refuses_a_launch_with_fewer_ranks_than_the_placement_needs() -> None:
    chosen = _choose(LLAMA_3_70B, 8)
    with pytest.raises(UnsupportedCombinationError, match=r"deepspeed --num_gpus 8"):
        resolve_auto(DSOptions(), chosen, world=1)
    options, placement = resolve_auto(DSOptions(), chosen, world=8)
    assert (options.mode, options.offload, placement.gpus) == ("tp", "none", 8)


def test_auto_under_more_ranks_splits_across_all_of_them() -> None:
    options, placement = resolve_auto(DSOptions(), _choose(SMOLLM2_135M, 2), world=2)
    assert (options.mode, placement.gpus) == ("tp", 2) and "launched with 2 ranks" in placement.reason
    options, _ = resolve_auto(DSOptions(), _choose(LLAMA_3_70B, 1), world=1)
    assert (options.mode, options.offload) == ("zero3", "cpu")
