"""Forced-choice twins: an oracle scores 1 and its opposite 0, items pair with their generative twin,
options are valid (contrast: the same options in both contexts; plain: options differ only in digits)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from probe_helpers import docs, hooks, task_config

from captrack.errors import InputError
from captrack.metrics.form_consistency import contrast_metrics
from captrack.probes.twins import forced_choice_twins

SEEDS = range(8)
CONTRAST = ["probe_w1_choice", "probe_w2_false_premise_choice", "probe_h3_tools_choice", "probe_h4_multiturn_choice"]
PLAIN = ["probe_h5_retrieval_choice", "probe_h6_citations_choice"]
# forced-choice folder -> the generative twin folder whose items it asks, as each task declares it (TWIN_OF)
TWINS = {task.removeprefix("captrack_"): twins[0].removeprefix("captrack_") for task, twins in forced_choice_twins().items()}


def _contrast_results(probe_margin: float, control_margin: float) -> list[tuple[float, bool]]:
    """Loglikelihoods whose probe and control margins (gold minus other, gold = 0) are the given ones."""
    return [(-2.0 + probe_margin, False), (-2.0, False), (-2.0 + control_margin, False), (-2.0, False)]


@pytest.mark.parametrize("folder", CONTRAST)
def test_contrast_oracle_scores_one_and_its_opposite_zero(folder: str) -> None:
    score = hooks(folder).process_results
    for seed in SEEDS:
        for doc in docs(folder, seed):
            assert score(doc, _contrast_results(3.0, -1.0)) == {"contrast_acc": 1.0}
            assert score(doc, _contrast_results(-1.0, 3.0)) == {"contrast_acc": 0.0}
            # a bias toward one option shared by both contexts (a shorter option, a habitual opener) cancels
            assert score(doc, _contrast_results(-5.0, -6.0)) == {"contrast_acc": 1.0}
            assert score(doc, _contrast_results(6.0, 7.0)) == {"contrast_acc": 0.0}
            assert score(doc, _contrast_results(1.0, 1.0)) == {"contrast_acc": 0.0}, "a tie is no evidence"


@pytest.mark.parametrize("folder", CONTRAST)
def test_contrast_items_score_the_same_options_in_both_contexts(folder: str) -> None:
    for doc in docs(folder, 3, n=64):
        forms = json.loads(doc["forms"])
        assert [f["choices"] for f in forms] == [doc["choices"], doc["choices"]] and doc["gold"] == 0
        assert forms[0]["prompt"] == doc["prompt"] != forms[1]["prompt"] == doc["control"]


def test_contrast_metrics_refuses_what_is_no_contrast_item() -> None:
    doc = {"id": "x", "gold": 0, "forms": json.dumps([{"prompt": "p", "choices": ["a", "b"]}, {"prompt": "q", "choices": ["a", "c"]}])}
    with pytest.raises(InputError, match="same two options"):
        contrast_metrics(doc, [-1.0, -2.0, -1.0, -2.0])


@pytest.mark.parametrize("folder", PLAIN)
def test_plain_oracle_scores_one_and_its_opposite_zero(folder: str) -> None:
    from lm_eval.tasks import get_task_dict

    from captrack.lmeval import task_manager

    name = task_config(folder)["task"]
    task = get_task_dict([name], task_manager(include_defaults=False))[name]
    for seed in SEEDS:
        for doc in docs(folder, seed):
            k, gold = len(doc["choices"]), int(doc["gold"])
            assert task.process_results(doc, [(-1.0 if i == gold else -4.0, False) for i in range(k)])["acc"] == 1.0
            assert task.process_results(doc, [(-1.0 if i != gold else -4.0, False) for i in range(k)])["acc"] == 0.0


@pytest.mark.parametrize("folder", PLAIN)
def test_plain_options_differ_only_in_digits(folder: str) -> None:
    """Same text once digits are masked and the same digit count: equal token length under digit-split tokenizers."""
    for seed in SEEDS:
        for doc in docs(folder, seed, n=48):
            masked = {re.sub(r"\d", "0", c) for c in doc["choices"]}
            assert len(masked) == 1, (doc["id"], doc["choices"])
            assert len(set(doc["choices"])) == len(doc["choices"])


def _twin_docs(folder: str, seed: int, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    twin = TWINS[folder]
    meta = {"lengths": [250]} if "retrieval" in folder else {}
    ours = list(hooks(folder).load(**(dict(task_config(folder)["metadata"]) | {"seed": seed, "n": n} | meta))["test"])
    theirs = list(hooks(twin).load(**(dict(task_config(twin)["metadata"]) | {"seed": seed, "n": n} | meta))["test"])
    return ours, theirs


@pytest.mark.parametrize("folder", list(TWINS))
def test_each_item_asks_its_generative_twins_item(folder: str) -> None:
    """Paired by the index in the id (a generator drops an item that repeats an earlier one, keeping the ids)."""
    for seed in (1, 1234):
        ours, theirs = _twin_docs(folder, seed, 60)
        twins = {int(t["id"].rsplit(":", 1)[1]): t for t in theirs}
        paired = [(mine, twins[int(mine["id"].rsplit(":", 1)[1])]) for mine in ours
                  if int(mine["id"].rsplit(":", 1)[1]) in twins]
        assert len(paired) >= 0.9 * len(ours) and len(ours) >= 0.9 * 60
        for mine, twin in paired:
            if folder == "probe_h4_multiturn_choice":
                assert json.loads(mine["turns"])[0] == json.loads(twin["turns"])[0], mine["id"]
                assert (mine["prompt"] == twin["prompt"]) == (twin["level"] == 1), mine["id"]
            else:
                assert mine["prompt"] == twin["prompt"], (mine["id"], twin["id"])


def test_w1_choice_controls_are_the_benign_twins_items() -> None:
    ours = docs("probe_w1_choice", 5, n=60)
    benign = docs("probe_w1_benign", 5, n=60)
    assert [d["control"] for d in ours] == [d["prompt"] for d in benign]


def test_false_premise_controls_make_the_premise_true() -> None:
    for doc in docs("probe_w2_false_premise_choice", 2, n=30):
        accept = doc["choices"][1]
        value = accept.rstrip(".").split()[-1].removesuffix("s")
        assert value not in doc["prompt"].split("Question:")[0] or doc["kind"] == "closed"
        assert value in doc["control"].split("Question:")[0], (doc["id"], accept)


def test_multiturn_controls_state_the_other_value_and_nothing_else() -> None:
    for seed in (2, 1234):
        for doc in docs("probe_h4_multiturn_choice", seed, n=60):
            value, other = doc["choices"]
            probe, control = (json.loads(f["turns"]) for f in json.loads(doc["forms"]))
            assert value != other and re.search(rf"\b{re.escape(value)}\b", probe[0]["content"])
            assert control[0]["content"] == re.sub(rf"\b{re.escape(value)}\b", other, probe[0]["content"])
            assert probe[1:] == control[1:] and other not in probe[0]["content"].split()


def test_tools_controls_ask_for_the_other_offered_tool() -> None:
    for doc in docs("probe_h3_tools_choice", 4, n=60):
        target, other = (json.loads(c + ' "arguments": {}}')["name"] for c in doc["choices"])
        head, request = doc["prompt"].rsplit("Request: ", 1)
        control_head, control_request = doc["control"].rsplit("Request: ", 1)
        assert head == control_head and request != control_request and target != other
        assert f'"name": "{target}"' in head and f'"name": "{other}"' in head  # both are offered
        assert target == doc["kind"]


def test_every_forced_choice_task_declares_its_twin() -> None:
    assert set(TWINS) == set(CONTRAST) | set(PLAIN)
