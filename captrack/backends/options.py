"""Options of the `captrack-ds` backend and the combinations refused before any weight is loaded.

Everything here is plain data and pure checks (no torch, no deepspeed import) so that a bad
command line fails in a second, on every rank, with a message that says what to use instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from captrack.errors import InputError

__all__ = [
    "KERNEL_INJECT_FAMILIES",
    "MODES",
    "OFFLOADS",
    "DSOptions",
    "UnsupportedCombinationError",
    "check_combination",
    "is_moe",
    "parse_options",
    "tp_mode_for",
]

MODES = ("auto", "tp", "autotp", "zero3")
OFFLOADS = ("none", "cpu", "nvme")

# Model types whose decoder layer has a kernel-injection policy in DeepSpeed 0.19.8
# (deepspeed/module_inject/replace_policy.py: replace_policies). Everything else runs AutoTP.
KERNEL_INJECT_FAMILIES = frozenset(
    {"bert", "bloom", "distilbert", "gpt2", "gpt_neo", "gpt_neox", "gptj", "internlm", "llama", "opt"}
)

# Families that DeepSpeed's init_inference AutoTP shards incorrectly. Qwen3-Next: it splits the fused
# Gated DeltaNet projection (linear_attn.in_proj_qkvz) that the layer then reshapes by the full head
# count, so the first forward fails with a shape error; deepspeed.initialize's AutoTP leaves it whole.
_TP_UNSUPPORTED = {"qwen3_next": "Qwen3-Next"}


def tp_mode_for(config: dict[str, Any]) -> str:
    """The tensor-parallel mode a model family runs under: ``tp``, or ``autotp`` where tp is refused."""
    return "autotp" if str(config.get("model_type", "")) in _TP_UNSUPPORTED else "tp"


class UnsupportedCombinationError(InputError):
    """A mode, model family, library version or machine that DeepSpeed is known to get wrong."""


@dataclass(frozen=True)
class DSOptions:
    """How to place one model with DeepSpeed; parsed from lm-eval's --model_args.

    Attributes:
        mode: ``auto`` (captrack.backends.auto_placement picks one of the others from the config and
            the machine), ``tp`` (init_inference tensor parallel), ``autotp`` (deepspeed.initialize
            AutoTP) or ``zero3`` (ZeRO-3 parameter partitioning, optionally offloaded).
        dtype: torch dtype name; None means bfloat16 on an accelerator, float32 on CPU.
        offload: ZeRO-3 parameter offload target (``none``, ``cpu`` or ``nvme``).
        nvme_path: folder for NVMe offload (required with ``offload=nvme``).
        kernel_inject: DeepSpeed's fused inference kernels (``tp`` mode, CUDA, a few families).
        meta_load: build the model on the meta device and let each rank read only its shards
            from the safetensors files; None means "when world > 1 (and no kernel injection)".
    """

    mode: str = "auto"
    dtype: str | None = None
    offload: str = "none"
    nvme_path: str | None = None
    kernel_inject: bool = False
    meta_load: bool | None = None


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise InputError(f"model_args {key}={value!r}: expected true or false")


def parse_options(kwargs: dict[str, Any]) -> DSOptions:
    """Pop captrack-ds's own keys from `kwargs` (the rest goes to HFLM) and validate them.

    Raises:
        InputError: an unknown mode or offload target, or nvme offload without ``nvme_path``.
    """
    mode = str(kwargs.pop("mode", "auto")).lower()
    if mode not in MODES:
        raise InputError(f"model_args mode={mode!r}: expected one of {', '.join(MODES)}")
    offload = str(kwargs.pop("offload", "none")).lower()
    if offload not in OFFLOADS:
        raise InputError(f"model_args offload={offload!r}: expected one of {', '.join(OFFLOADS)}")
    if mode == "auto" and offload != "none":
        mode = "zero3"  # offloading is a ZeRO-3 option: asking for it chooses the mode
    if offload != "none" and mode != "zero3":
        raise InputError(f"model_args offload={offload} needs mode=zero3 (got mode={mode})")
    nvme_path = kwargs.pop("nvme_path", None)
    if offload == "nvme" and not nvme_path:
        raise InputError("model_args offload=nvme needs nvme_path=/a/folder/on/a/local/nvme/disk")
    kernel_inject = _as_bool("kernel_inject", kwargs.pop("kernel_inject", False))
    if kernel_inject and mode == "auto":
        mode = "tp"  # kernels are injected by init_inference, mode=tp
    if kernel_inject and mode != "tp":
        raise InputError(f"model_args kernel_inject=true is a mode=tp option (got mode={mode})")
    meta = kwargs.pop("meta_load", None)
    dtype = kwargs.pop("dtype", None)
    return DSOptions(mode=mode, dtype=None if dtype in (None, "auto") else str(dtype), offload=offload,
                     nvme_path=str(nvme_path) if nvme_path else None, kernel_inject=kernel_inject,
                     meta_load=None if meta is None else _as_bool("meta_load", meta))


def is_moe(config: dict[str, Any]) -> bool:
    """Whether a model config (as a dict) describes a mixture-of-experts model."""
    text = config.get("text_config") or {}
    for source in (config, text):
        for key in ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"):
            if int(source.get(key) or 0) > 1:
                return True
    return False


def check_combination(options: DSOptions, config: dict[str, Any], world: int, transformers_version: str,
                      accelerator: str, libaio: bool) -> None:
    """Refuse the combinations DeepSpeed 0.19.8 is known to get wrong, saying what to use instead.

    Args:
        options: the parsed backend options.
        config: the model's config.json as a dict (``model_type`` and expert counts are read).
        world: number of ranks in the launch.
        transformers_version: ``transformers.__version__``.
        accelerator: DeepSpeed's accelerator name (``cuda``, ``cpu``, ...).
        libaio: whether DeepSpeed's async_io op can be built (libaio headers and library present).

    Raises:
        UnsupportedCombinationError: with the alternative to use.
    """
    family = str(config.get("model_type", ""))
    name = _TP_UNSUPPORTED.get(family)
    if name and options.mode == "tp":
        raise UnsupportedCombinationError(
            f"{name} ({family}) cannot run under mode=tp: DeepSpeed's init_inference AutoTP splits its fused "
            "linear-attention projection (Gated DeltaNet in_proj_qkvz) and the forward pass fails. Use "
            "mode=autotp (deepspeed.initialize with tensor_parallel.autotp_size) or mode=zero3.")
    major = int(transformers_version.split(".")[0])
    if options.mode in ("tp", "autotp") and world > 1 and major >= 5 and is_moe(config):
        raise UnsupportedCombinationError(
            f"tensor parallel for the mixture-of-experts model {family!r} needs transformers<5 "
            f"(found {transformers_version}): transformers 5 stores experts as fused 3-D tensors that "
            "DeepSpeed AutoTP does not shard. Use mode=zero3, or install 'transformers>=4.57,<5'.")
    if options.kernel_inject:
        if accelerator != "cuda":
            raise UnsupportedCombinationError(
                f"kernel_inject=true needs a CUDA device (DeepSpeed accelerator is {accelerator!r}); "
                "drop kernel_inject (AutoTP gives the same numbers).")
        if family not in KERNEL_INJECT_FAMILIES:
            raise UnsupportedCombinationError(
                f"DeepSpeed has no inference kernels for {family!r} (it has them for "
                f"{', '.join(sorted(KERNEL_INJECT_FAMILIES))}); drop kernel_inject=true to use AutoTP.")
    if options.offload == "nvme" and not libaio:
        raise UnsupportedCombinationError(
            "offload=nvme needs libaio for DeepSpeed's async_io op, and it was not found: install it "
            "(`apt-get install libaio-dev`, or set CFLAGS/LDFLAGS to a libaio built from source) "
            "or use offload=cpu.")
