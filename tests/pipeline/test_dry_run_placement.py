"""`captrack run --dry-run` on a GPU node is a feasibility check (issue 51): a stage needing more GPUs, or more
planned memory per GPU, than the node has is refused before any work; an evaluation's memory is planned for the
tasks' longest request (the model's own tokenizer on every evaluated prompt, plus what follows it), not for a fixed
4,096 tokens, and where that length cannot be known the 4,096 assumption is said. The GPU inventory is injected
with CAPTRACK_GPUS, so this runs on CPU."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from tinymodel import CHATML

from captrack.cli import main
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.job_stages import planned_gpu_memory
from captrack.pipeline.runner import plan

TASK = "captrack_probe_c3_passages"  # generative, its longest prompt a few hundred tokens
SMOLLM2_135M = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 576,
                "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "intermediate_size": 1536,
                "vocab_size": 49152, "tie_word_embeddings": True, "max_position_embeddings": 8192}
LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a real tokenizer (tinymodel's, no weights) and SmolLM2-135M's config.json: the plan reads no weights."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(["Read the passage and answer the question."] * 20, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        pad_token="<|im_end|>", unk_token="<|endoftext|>")
    tokenizer.chat_template = CHATML
    folder = tmp_path_factory.mktemp("m") / "small"
    tokenizer.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(SMOLLM2_135M))
    return folder


def _manifest(folder: Path, base: Path, variant: str = "", batch_size: int = 32) -> Path:
    path = folder / "exp.yaml"
    variant = variant or f"{{name: v, model_args: {{pretrained: {base}}}, algorithm: SFT}}"
    path.write_text(f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{TASK}]\nbatch_size: {batch_size}\n"
                    f"base: {{name: base, model_args: {{pretrained: {base}}}}}\nvariants:\n  - {variant}\n")
    return path


def test_a_four_rank_stage_on_two_gpus_is_refused(tmp_path: Path, small: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CAPTRACK_GPUS", "2x80GB")
    manifest = _manifest(tmp_path, small, f"{{name: v, model: captrack-ds, ranks: 4, model_args: {{pretrained: {small}}}}}")
    assert main(["run", str(manifest), "--dry-run"]) == 1
    captured = capsys.readouterr()
    assert "evaluate v (seed 0) needs 4 GPUs; this node has 2" in captured.err and "nothing was run" in captured.err
    assert "would run" not in captured.out and not (tmp_path / "work").exists()


def test_a_stage_planning_more_than_the_gpus_hold_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    big = tmp_path / "llama-8b"
    big.mkdir()
    (big / "config.json").write_text(json.dumps(LLAMA_8B))  # no tokenizer: 4,096 tokens assumed, and said
    monkeypatch.setenv("CAPTRACK_GPUS", "2x24GB")
    manifest = _manifest(tmp_path, big, batch_size=8)
    assert main(["run", str(manifest), "--dry-run"]) == 1
    captured = capsys.readouterr()
    assert "evaluate base (seed 0) plans" in captured.err and "this node's GPUs hold 24.0 GB at most" in captured.err
    assert "4,096 tokens assumed: no tokenizer in" in captured.out
    monkeypatch.setenv("CAPTRACK_GPUS", "2x141GB")  # the same plan on larger GPUs would run
    assert main(["run", str(manifest), "--dry-run"]) == 0
    assert "would run" in capsys.readouterr().out


def test_memory_is_planned_for_the_tasks_longest_request(tmp_path: Path, small: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The 135M evaluation at batch 32: 63.9 GB per GPU for 4,096 tokens; planned for the task's own requests."""
    from captrack.pipeline.job_stages import request_length

    monkeypatch.setenv("CAPTRACK_GPUS", "1x24GB")
    manifest = _manifest(tmp_path, small)
    stage = next(s for s in plan(load_experiment(manifest), Console(file=io.StringIO())) if s.title == "evaluate base (seed 0)")
    assert stage.job is not None
    job = stage.job(1)
    length = request_length(job.args["spec"])
    assumed = planned_gpu_memory("hf", job.args["spec"]["model_args"], 1, 32)
    assert length.known and TASK in length.why and 64 <= length.tokens < 4096
    assert 0 < job.needs.gpu_memory < assumed / 2, (job.needs.gpu_memory, assumed)
    assert job.needs.gpu_memory == planned_gpu_memory("hf", job.args["spec"]["model_args"], 1, 32, length.tokens)
    out = io.StringIO()
    from captrack.pipeline.runner import run_experiment

    run_experiment(load_experiment(manifest), dry_run=True, console=Console(file=out, width=400))
    assert "would run" in out.getvalue() and f"{length.tokens:,} tokens planned: {TASK}" in out.getvalue()


def test_the_length_counts_every_prompt_with_the_tokenizer(tmp_path: Path, small: Path) -> None:
    """The longest prompt in tokens is found even where another prompt has more bytes (a bound, never an estimate)."""
    from transformers import AutoTokenizer

    from captrack.lmeval import task_manager
    from captrack.pipeline.job_stages import request_length

    manager = task_manager(include_defaults=False)
    task = manager.load([TASK])["tasks"][TASK]
    tokenizer = AutoTokenizer.from_pretrained(small)
    prompts = [task.doc_to_text(doc) for doc in task.eval_docs]
    longest = max(len(tokenizer(p)["input_ids"]) for p in prompts)
    gen = task.config.generation_kwargs["max_gen_toks"]
    plain = tmp_path / "plain"  # the same tokenizer without a chat template: nothing but prompt and generation
    shutil.copytree(small, plain)
    config = json.loads((plain / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(config))
    (plain / "chat_template.jinja").unlink(missing_ok=True)
    spec = {"model_args": {"pretrained": str(plain)}, "tasks": [TASK], "metadata": {}, "limit": None, "samples": None,
            "apply_chat_template": True}
    found = request_length(spec)
    assert found.known and found.tokens >= longest + gen and found.tokens - (longest + gen) < 64
    assert not request_length({**spec, "limit": 1}).tokens > found.tokens


def test_a_task_whose_data_may_be_a_download_keeps_the_assumption_and_says_so(small: Path) -> None:
    from captrack.pipeline.job_stages import request_length

    spec = {"model_args": {"pretrained": str(small)}, "tasks": [TASK, "captrack_boolq_subset"], "metadata": {},
            "limit": None, "samples": None, "apply_chat_template": True}
    found = request_length(spec)
    assert (found.tokens, found.known) == (4096, False)
    assert "4,096 tokens assumed: captrack_boolq_subset's prompts are read only when it runs" in found.why


def test_a_cpu_node_plans_no_request_lengths(tmp_path: Path, small: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Counting every prompt costs tens of seconds a model folder; a local run without GPUs has nothing to pack."""
    import captrack.pipeline.request_lengths as lengths

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("request lengths counted on a CPU node")

    monkeypatch.setattr(lengths, "longest_request", refuse)
    monkeypatch.setenv("CAPTRACK_GPUS", "0")
    assert main(["run", str(_manifest(tmp_path, small)), "--dry-run"]) == 0
    assert "planned memory per GPU" not in capsys.readouterr().out
