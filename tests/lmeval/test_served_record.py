"""A served evaluation records what an in-process vLLM evaluation records, and several lm-eval processes against one
server write what one process writes (issue 55), on a stand-in server (completions_standin.py: vLLM's completions
API with a fixed logprob per token) and a tiny local tokenizer: real lm-eval, real run folders, no model.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tinymodel import CHATML

from captrack.lmeval.evaluate import EvalSpec
from captrack.lmeval.served import Server, evaluate_through, free_port, serve

STANDIN = Path(__file__).with_name("completions_standin.py")
TASKS = ["captrack_probe_c1_facts", "captrack_probe_c2_logic", "captrack_probe_w1_choice"]
VOLATILE = {"date", "start_time", "end_time", "total_evaluation_time_seconds"}
"""What two runs of the same evaluation write differently."""


@pytest.fixture(scope="module")
def tokenizer_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE tokenizer (the tiny model's, tests/tinymodel.py) saved alone: what local-completions loads."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tok")
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(["user assistant system the answer is"], trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        pad_token="<|im_end|>", unk_token="<|endoftext|>")
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "standin.log"
    with serve([sys.executable, str(STANDIN), str(port)], port, log, deadline_s=60, grace_s=5) as running:
        yield running


def _spec(model: Path, tasks: list[str]) -> EvalSpec:
    return EvalSpec(model_args={"pretrained": str(model), "dtype": "float32", "max_model_len": 512,
                                "enforce_eager": True}, tasks=tasks, model="vllm", batch_size=2, limit=3, device="cpu")


def _config(out: Path) -> dict[str, Any]:
    (results,) = out.rglob("results_*.json")
    return dict(json.loads(results.read_text())["config"])


def test_a_served_run_records_the_vllm_backend_and_compare_sees_no_backend_difference(
        server: Server, tokenizer_folder: Path, tmp_path: Path) -> None:
    from captrack.labels import VariantLabels
    from captrack.results.runfiles import discover_runs
    from captrack.results.settings import setting_warnings
    from captrack.results.store import Store

    spec = _spec(tokenizer_folder, TASKS[:1])
    evaluate_through(server, spec, tmp_path / "served", None, server_env={"VLLM_BATCH_INVARIANT": "1"})
    config = _config(tmp_path / "served")
    assert config["model"] == "vllm" and config["model_args"] == spec.model_args, config
    assert config["backend_version"] == "vllm 0.0.0-standin" and config["vllm_batch_invariant"] == "on"
    assert config["served"] == "vLLM 0.0.0-standin server, lm-eval local-completions client"
    assert config["batch_size"] == 2
    # An in-process vLLM run of the same checkpoint: its results file's config is lm-eval's plus backend_info's.
    shutil.copytree(tmp_path / "served", tmp_path / "inprocess")
    (results,) = (tmp_path / "inprocess").rglob("results_*.json")
    data = json.loads(results.read_text())
    data["config"] = {"model": "vllm", "model_args": spec.model_args, "batch_size": 2, "gen_kwargs": None,
                      "backend_version": "vllm 0.0.0-standin", "vllm_batch_invariant": "on"}
    data["model_source"] = "vllm"
    results.write_text(json.dumps(data))
    store = Store(tmp_path / "s.duckdb")
    for name in ("inprocess", "served"):
        store.ingest(discover_runs(tmp_path / name), VariantLabels(name=name))
    assert setting_warnings(store, "inprocess", "served") == []


def _run_files(out: Path) -> dict[str, Any]:
    """Every file of a run folder by its name without the date: the results file's content less its dates, the samples
    files' lines."""
    files: dict[str, Any] = {}
    for path in sorted(out.rglob("*.json*")):
        stem, _, _ = path.name.rpartition("_")
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            files[f"{path.parent.name}/{stem}"] = {k: v for k, v in data.items() if k not in VOLATILE}
        else:
            files[f"{path.parent.name}/{stem}"] = path.read_text().splitlines()
    return files


def test_task_groups_in_parallel_write_what_one_process_writes(server: Server, tokenizer_folder: Path,
                                                              tmp_path: Path) -> None:
    spec = _spec(tokenizer_folder, TASKS)
    single = evaluate_through(server, spec, tmp_path / "one", tmp_path / "cache" / "one")
    merged = evaluate_through(server, spec, tmp_path / "two", tmp_path / "cache" / "two", parallel=2)
    assert merged.parent.parent == tmp_path / "two" and single.parent.parent == tmp_path / "one"
    ones, twos = _run_files(tmp_path / "one"), _run_files(tmp_path / "two")
    assert sorted(ones) == sorted(twos) and len(ones) == 1 + len(TASKS)
    results = next(k for k in ones if k.endswith("/results"))
    assert ones[results]["config"].pop("use_cache") == str(tmp_path / "cache" / "one")
    assert twos[results]["config"].pop("use_cache") == str(tmp_path / "cache" / "two")
    assert list(ones[results]["results"]) == list(twos[results]["results"])  # the same order of tasks
    assert json.dumps(ones, sort_keys=False) == json.dumps(twos, sort_keys=False)
    assert not list((tmp_path).glob(".two.groups"))  # the groups' folders are gone
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        "one_rank0.db", "two-group0of2_rank0.db", "two-group1of2_rank0.db"]
