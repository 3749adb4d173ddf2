"""captrack-ds gives `--model hf`'s numbers: identical greedy generations and metrics, and per-sample
loglikelihoods bitwise equal in bfloat16 at world 1 (the same computation: every placement keeps
transformers' float32 rotary buffers), within 1e-4 in float32, on tiny random models of eight families,
on CPU (DS_ACCELERATOR=cpu). Two ranks split each matrix product and sum the halves, a different order
of additions: there loglikelihoods agree within 1e-4 in float32 and within BF16_WORLD2_TOLERANCE in
bfloat16: bfloat16 keeps 8 bits of mantissa, so a value between 16 and 32 moves in steps of 0.125 and one
rounding the other way is a difference of 0.125 (measured: 0.125 for Qwen3-MoE, 0 for the others).

Three launches, each a real process tree: one process (hf references, mode=tp at world 1, mode=zero3),
torchrun with 2 ranks (mode=tp sharded from meta-device loading; Qwen3-Next with mode=autotp), and
DeepSpeed's own launcher with 2 ranks running the `captrack-eval` command line. The first DeepSpeed
process group on a machine JIT-compiles DeepSpeed's CPU shared-memory all-reduce op (about a minute,
cached under ~/.cache/torch_extensions afterwards).

On a CUDA machine, CAPTRACK_PARITY_DEVICE=cuda runs the same checks on the GPU (DeepSpeed picks
CUDA; the two-rank launches need two GPUs).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from parity import compare_runs
from parity_driver import GEN_KWARGS
from tinyfamilies import FAMILIES, build_family

STARTED = time.time()  # buffers older than this module's launches are not theirs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None,
                       reason="deepspeed is not importable: pip install deepspeed==0.19.8 (the dev extra has it)"),
    pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")),
                       reason="DeepSpeed JIT-compiles its CPU all-reduce op and needs a C++ compiler (apt-get install g++)"),
]

TOLERANCE = {"float32": 1e-4, "bfloat16": 0.0}  # world 1: bfloat16 is the same computation, bit for bit
BF16_WORLD2_TOLERANCE = 0.25  # two bfloat16 steps at magnitude 16-32
HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DTYPES = ("float32", "bfloat16")
# Gemma-3 under ZeRO-3: transformers 4.57 initialises the (partitioned, empty) embedding's padding row
# while loading and fails with an IndexError before DeepSpeed is reached; not a captrack-ds path.
_ZERO3 = [f for f in FAMILIES if f != "gemma3_text"]
WORLD1 = [(f, "tp") for f in FAMILIES if f != "qwen3_next"] + [(f, "zero3") for f in _ZERO3] + [
    ("llama", "zero3+cpu"), ("qwen3_next", "autotp")] + [(f, "auto") for f in FAMILIES]
WORLD2 = [(f, "tp") for f in FAMILIES if f not in ("qwen3_next", "gemma3_text")] + [("qwen3_next", "autotp")]
_LAUNCH_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "LOCAL_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_KEYS}
    env.update(OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    if os.environ.get("CAPTRACK_PARITY_DEVICE", "cpu") == "cpu":
        env["DS_ACCELERATOR"] = "cpu"
    return env


def _port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def _launch(command: list[str], log: Path) -> None:
    with log.open("w") as handle:
        done = subprocess.run(command, env=_env(), stdout=handle, stderr=subprocess.STDOUT, timeout=900, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command[:6])} ... exited {done.returncode}:\n{log.read_text()[-4000:]}")


def _runs(models: Path, pairs: list[tuple[str, str]], with_hf: bool, prefix: str = "",
          dtypes: tuple[str, ...] = DTYPES) -> list[dict]:
    runs = []
    for dtype in dtypes:
        for family in dict.fromkeys(f for f, _ in pairs):
            if with_hf:
                runs.append({"name": f"hf-{family}-{dtype}", "model": "hf",
                             "model_args": {"pretrained": str(models / family), "dtype": dtype}})
            for fam, mode in pairs:
                if fam == family:
                    name, _, offload = mode.partition("+")  # "zero3+cpu": ZeRO-3 with CPU offload
                    args = {"pretrained": str(models / family), "mode": name, "dtype": dtype}
                    if offload:
                        args["offload"] = offload
                    runs.append({"name": f"{prefix}{mode}-{family}-{dtype}", "model": "captrack-ds", "model_args": args})
    return runs


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("families")
    for family in FAMILIES:
        build_family(root, family)
    return root


@pytest.fixture(scope="module")
def world1(models: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("world1")
    (out / "runs.json").write_text(json.dumps(_runs(models, WORLD1, with_hf=True)))
    _launch([sys.executable, str(HERE / "parity_driver.py"), str(out), str(out / "runs.json")], out / "log.txt")
    return out


@pytest.fixture(scope="module")
def world2(models: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("world2")
    # One launch per dtype: after deepspeed.initialize (autotp, last in each launch) has run in a process,
    # a later meta-device tp load there fails inside DeepSpeed; a real evaluation places one model per process.
    for dtype in DTYPES:
        runs = out / f"runs-{dtype}.json"
        runs.write_text(json.dumps(_runs(models, WORLD2, with_hf=False, prefix="2x", dtypes=(dtype,))))
        _launch([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", _port(),
                 str(HERE / "parity_driver.py"), str(out), str(runs)], out / f"log-{dtype}.txt")
    return out


def _assert_parity(reference: Path, candidate: Path, label: str, tolerance: float, same_text: bool = True) -> None:
    parity = compare_runs(reference, candidate)
    print(f"{label}: max |loglikelihood diff| {parity.max_ll_diff:.3g} over {parity.n_loglikelihoods} requests, "
          f"{parity.n_generations} generations")
    assert parity.n_loglikelihoods > 0 and parity.n_generations > 0
    assert parity.max_ll_diff <= tolerance
    if same_text:
        assert parity.generation_mismatches == []
        assert parity.metric_mismatches == []


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("family", "mode"), WORLD1)
def test_one_process_matches_hf(world1: Path, family: str, mode: str, dtype: str) -> None:
    _assert_parity(world1 / f"hf-{family}-{dtype}.json", world1 / f"{mode}-{family}-{dtype}.json",
                   f"{family} {mode} world 1 {dtype}", TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("family", "mode"), WORLD2)
def test_two_ranks_under_torchrun_match_hf(world1: Path, world2: Path, family: str, mode: str, dtype: str) -> None:
    # In bfloat16 a summed half can round a near-tie the other way: greedy text may then differ.
    tolerance = TOLERANCE["float32"] if dtype == "float32" else BF16_WORLD2_TOLERANCE
    _assert_parity(world1 / f"hf-{family}-{dtype}.json", world2 / f"2x{mode}-{family}-{dtype}.json",
                   f"{family} {mode} world 2 {dtype}", tolerance, same_text=dtype == "float32")


def test_captrack_eval_under_the_deepspeed_launcher(world1: Path, models: Path, tmp_path: Path) -> None:
    """The launcher adds --local_rank=N to the command line; both ranks evaluate, rank 0 alone writes."""
    script = tmp_path / "captrack_eval.py"
    script.write_text("from captrack.lmeval import main\n\nmain()\n")
    out = tmp_path / "out"
    _launch([sys.executable, "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "--master_port", _port(),
             str(script), "--model", "captrack-ds",
             "--model_args", f"pretrained={models / 'llama'},mode=tp,dtype=float32",
             "--tasks", "captrack_probe_c1_facts,captrack_probe_c2_word_problems", "--limit", "4",
             "--batch_size", "2", "--gen_kwargs", GEN_KWARGS, "--apply_chat_template", "--log_samples",
             "--output_path", str(out)],
            tmp_path / "log.txt")
    assert len(list(out.rglob("results_*.json"))) == 1
    _assert_parity(world1 / "hf-llama-float32.json", out, "llama tp world 2 (deepspeed launcher, captrack-eval)",
                   TOLERANCE["float32"])


@pytest.fixture()
def restored_environ() -> Iterator[None]:
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.mark.usefixtures("restored_environ")
def test_refused_combinations_fail_before_loading(models: Path) -> None:
    from captrack.backends.deepspeed_lm import DeepSpeedLM
    from captrack.backends.options import UnsupportedCombinationError

    os.environ["DS_ACCELERATOR"] = "cpu"
    with pytest.raises(UnsupportedCombinationError, match="Use mode=autotp"):
        DeepSpeedLM(pretrained=str(models / "qwen3_next"), mode="tp")
    with pytest.raises(UnsupportedCombinationError, match="needs a CUDA device"):
        DeepSpeedLM(pretrained=str(models / "llama"), kernel_inject="true")
    from deepspeed.ops.op_builder import AsyncIOBuilder

    if not AsyncIOBuilder().is_compatible(verbose=False):
        with pytest.raises(UnsupportedCombinationError, match="libaio"):
            DeepSpeedLM(pretrained=str(models / "llama"), mode="zero3", offload="nvme", nvme_path=str(models))
    os.environ.update(WORLD_SIZE="2", RANK="0", LOCAL_RANK="0")
    with pytest.raises(UnsupportedCombinationError, match="Pass an integer"):
        DeepSpeedLM(pretrained=str(models / "llama"), batch_size="auto")


def test_no_shared_memory_is_left_behind(world1: Path, world2: Path) -> None:
    """DeepSpeed's CPU all-reduce never unlinks its /dev/shm buffer (67 MB per rank); captrack-ds removes its own."""
    if os.environ.get("CAPTRACK_PARITY_DEVICE", "cpu") != "cpu":
        pytest.skip("the shared-memory all-reduce is DeepSpeed's CPU accelerator's")
    left = [p.name for p in Path("/dev/shm").glob(f"deepspeed_allreduce_buffer_{os.getuid()}_*") if p.stat().st_mtime >= STARTED]
    assert left == []
