"""The two probe task classes build the requests they promise, with and without a chat template."""

from __future__ import annotations

import json
from typing import Any

import pytest

from captrack.errors import InputError
from captrack.lmeval import task_manager
from captrack.metrics.form_consistency import form_metrics


def _task(name: str) -> Any:
    from lm_eval.tasks import get_task_dict

    return get_task_dict([name], task_manager(include_defaults=False))[name]


def _chat(messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    return "".join(f"<{m['role']}>{m['content']}</{m['role']}>" for m in messages) + "<assistant>"


@pytest.mark.parametrize("name", ["captrack_probe_c5a_forms", "captrack_probe_c5c_multilingual"])
@pytest.mark.parametrize("chat", [False, True])
def test_forms_task_asks_every_option_under_every_form(name: str, chat: bool) -> None:
    task = _task(name)
    doc = next(iter(task.test_docs()))
    ctx = task.fewshot_context(doc, 0, apply_chat_template=chat, chat_template=_chat if chat else None)
    requests = task.construct_requests(doc, ctx, metadata=(name, 0, 1), apply_chat_template=chat, chat_template=_chat)
    forms = json.loads(doc["forms"])
    assert len(requests) == sum(len(f["choices"]) for f in forms)
    pairs = [(f["prompt"], c) for f in forms for c in f["choices"]]
    for request, (prompt, choice) in zip(requests, pairs, strict=True):
        context, continuation = request.arguments
        assert prompt in context and continuation == (choice if chat else f" {choice}")
        assert context.startswith("<user>") == chat
    assert [r.idx for r in requests] == list(range(len(requests)))


def test_forms_task_refuses_a_context_without_the_prompt() -> None:
    task = _task("captrack_probe_c5a_forms")
    doc = next(iter(task.test_docs()))
    with pytest.raises(InputError, match="exactly once"):
        task.construct_requests(doc, "something else", metadata=("t", 0, 1))


def test_form_metrics_needs_one_loglikelihood_per_option() -> None:
    doc = {"id": "x", "gold": 0, "forms": json.dumps([{"prompt": "p", "choices": ["a", "b"]}])}
    assert form_metrics(doc, [-1.0, -2.0]) == {"form_accuracy": 1.0, "form_consistency": 1.0}
    with pytest.raises(InputError, match="got 3 loglikelihoods"):
        form_metrics(doc, [-1.0, -2.0, -3.0])


def test_conversation_task_sends_real_turns_under_a_chat_template() -> None:
    task = _task("captrack_probe_h4_multiturn")
    doc = next(iter(task.test_docs()))
    turns = json.loads(doc["turns"])
    plain = task.construct_requests(doc, task.fewshot_context(doc, 0), metadata=("t", 0, 1))
    assert plain.arguments[0] == doc["prompt"] and plain.arguments[0].endswith("Assistant:")
    chat = task.construct_requests(doc, "ignored", metadata=("t", 0, 1), apply_chat_template=True, chat_template=_chat)
    assert chat.arguments[0] == _chat(turns)
    assert chat.arguments[0].count("<user>") == 2 and chat.arguments[0].count("<assistant>") == 2
    assert chat.arguments[1]["max_gen_toks"] == task.config.generation_kwargs["max_gen_toks"]


@pytest.mark.parametrize("chat", [False, True])
def test_conversation_forms_task_renders_each_form_from_its_own_turns(chat: bool) -> None:
    task = _task("captrack_probe_h4_multiturn_choice")
    doc = next(iter(task.test_docs()))
    ctx = task.fewshot_context(doc, 0, apply_chat_template=chat, chat_template=_chat if chat else None)
    requests = task.construct_requests(doc, ctx, metadata=("t", 0, 1), apply_chat_template=chat, chat_template=_chat)
    forms = json.loads(doc["forms"])
    expected = [(_chat(json.loads(f["turns"])) if chat else f["prompt"], c if chat else f" {c}")
                for f in forms for c in f["choices"]]
    assert [r.arguments for r in requests] == expected and len(expected) == 4
    assert requests[0].arguments[0] != requests[2].arguments[0]  # the probe and its control are two conversations
    assert [r.idx for r in requests] == [0, 1, 2, 3]
