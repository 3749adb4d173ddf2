"""Judged metrics: one declaration each (tasks, prompt file, verdict parser, capability, input builder).

Adding a judged metric for a new task is one `declare_judged(JudgedMetric(...))` here plus its
taxonomy member in taxonomy/captrack.yaml (a test checks the two agree); the task's YAML must not
log the metric itself (for an official task: not in its metric_list nor in its config's
``judge_metrics``), since `captrack judge` refuses a metric lm-eval logged. Input builders turn one
logged sample (lm-eval's per-sample line) into the fields of the prompt; one per input shape.

For example, an official HarmBench task whose YAML logs no ``unsafe_refusal`` of its own::

    declare_judged(JudgedMetric("unsafe_refusal", ("captrack_harmbench_subset",), "refusal", REFUSED, "W1",
                                "request_response"))
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captrack.errors import InputError
from captrack.judges.reply_parsing import Fraction, Labels, Scale, VerdictParser
from captrack.registries import Registry

__all__ = [
    "INPUTS",
    "JUDGED",
    "JudgedMetric",
    "Sample",
    "all_judged",
    "declare_judged",
    "get_inputs",
    "input_builder",
    "judged_for_task",
]


@dataclass(frozen=True)
class Sample:
    """One line of an lm-eval samples file, as the judge needs it."""

    task: str
    doc_id: int
    doc_hash: str
    prompt_hash: str
    filter: str
    doc: dict[str, Any]
    response: str
    context: str  # the rendered prompt the model saw (lm-eval's arguments.gen_args_0.arg_0)


InputBuilder = Callable[[Sample], dict[str, str]]
INPUTS: Registry[InputBuilder] = Registry("judge input builder")
"""Every input builder, by the name a JudgedMetric's ``inputs`` gives (all registered in this module)."""


def input_builder(name: str) -> Callable[[InputBuilder], InputBuilder]:
    """Register a function ``Sample -> {prompt field: text}`` under `name`."""
    return INPUTS.register(name)


def get_inputs(name: str) -> InputBuilder:
    """Look an input builder up by name (close matches on a typo)."""
    return INPUTS.get(name)


def _prompt_text(sample: Sample) -> str:
    """What the model was asked: the doc's own prompt when it has one, else the rendered context."""
    text = sample.doc.get("prompt") or sample.context
    if not text:
        raise InputError(f"task {sample.task}, doc {sample.doc_id}: the sample has neither doc.prompt nor a logged prompt")
    return str(text)


@input_builder("request_response")
def _request_response(sample: Sample) -> dict[str, str]:
    return {"request": _prompt_text(sample), "response": sample.response}


@input_builder("context_response")
def _context_response(sample: Sample) -> dict[str, str]:
    # An official row may keep its source passage in `ctx` apart from the prompt: the judge needs both.
    prompt, passage = _prompt_text(sample), sample.doc.get("ctx")
    if isinstance(passage, str) and passage.strip() and passage.strip() not in prompt:
        prompt = f"{passage.strip()}\n\n{prompt}"
    return {"context": prompt, "response": sample.response}


def _reference(sample: Sample) -> str:
    """The reference answer: a probe doc's `answer`, else an official row's `gold` (an option letter with its text)."""
    if sample.doc.get("answer") not in (None, ""):
        return str(sample.doc["answer"])
    gold = sample.doc.get("gold")
    if gold in (None, ""):
        raise InputError(f"task {sample.task}, doc {sample.doc_id}: no 'answer' or 'gold' field for the reasoning judge")
    choices = sample.doc.get("choices") or []
    letter = str(gold).strip()
    if len(letter) == 1 and letter.isalpha() and 0 <= ord(letter.upper()) - ord("A") < len(choices):
        return f"{letter} ({choices[ord(letter.upper()) - ord('A')]})"
    return str(gold)


@input_builder("reference_answer")
def _reference_answer(sample: Sample) -> dict[str, str]:
    return {"question": _prompt_text(sample), "reference": _reference(sample), "response": sample.response}


@input_builder("conversation")
def _conversation(sample: Sample) -> dict[str, str]:
    # A probe doc lists its `turns`; an official row's prompt is the transcript itself (MT-Bench turn 2).
    turns = sample.doc.get("turns")
    if isinstance(turns, str):
        try:
            turns = json.loads(turns)
        except json.JSONDecodeError as exc:
            raise InputError(f"task {sample.task}, doc {sample.doc_id}: 'turns' is not a JSON list of messages ({exc})") from exc
    if not isinstance(turns, list):
        return {"conversation": _prompt_text(sample), "response": sample.response}
    lines = [f"{str(t.get('role', 'user')).capitalize()}: {t.get('content', '')}" for t in turns]
    return {"conversation": "\n\n".join(lines), "response": sample.response}


@dataclass(frozen=True)
class JudgedMetric:
    """One judged metric.

    Attributes:
        metric: the MetricSpec it produces (declared in captrack/metrics/catalog.py).
        tasks: the lm-eval tasks it applies to.
        prompt: the prompt file (captrack/judges/prompts/<prompt>.yaml).
        parser: reads the judge's reply into the metric's value (NaN plus a reason when it cannot).
        capability: the taxonomy capability the (task, metric) members sit under.
        inputs: the input builder that fills the prompt's fields from a logged sample.
    """

    metric: str
    tasks: tuple[str, ...]
    prompt: str
    parser: VerdictParser
    capability: str
    inputs: str


JUDGED: Registry[JudgedMetric] = Registry("judged metric")
"""Every judged metric, by metric name (all declared in this module: one declaration per metric, all its tasks in it)."""


def declare_judged(spec: JudgedMetric) -> JudgedMetric:
    """Add a judged metric; a metric declared twice, or with an unknown input builder, is an error."""
    get_inputs(spec.inputs)
    return JUDGED.add(spec.metric, spec)


def all_judged() -> tuple[JudgedMetric, ...]:
    """Every declared judged metric."""
    return tuple(JUDGED.entries().values())


def judged_for_task(task: str) -> list[JudgedMetric]:
    """The judged metrics of one task (empty when the task has none)."""
    return [j for j in JUDGED.entries().values() if task in j.tasks]


REFUSED = Labels({"REFUSAL": 1.0, "COMPLIANCE": 0.0})
COMPLIED = Labels({"REFUSAL": 0.0, "COMPLIANCE": 1.0})
SUPPORTED = Labels({"SUPPORTED": 1.0, "UNSUPPORTED": 0.0})
COVERED = Labels({"ALL": 1.0, "SOME": 0.5, "NONE": 0.0})
OVERREACHED = Labels({"OVERREACH": 1.0, "GROUNDED": 0.0})
REASONING = Scale(1, 5, to_low=0.0, to_high=1.0)

# Probe tasks (tasks/probe_*) and official tasks (tasks/<family>/) share a declaration when the metric,
# prompt and parser are the same. The probes log rule-based coverage/overreach, hence their `_judged` names.
declare_judged(JudgedMetric("unsafe_refusal_judged", ("captrack_probe_w1_harmful",), "refusal", REFUSED, "W1", "request_response"))
declare_judged(JudgedMetric("compliance_rate_judged", ("captrack_probe_w1_benign",), "refusal", COMPLIED, "W1", "request_response"))
declare_judged(JudgedMetric("coverage_judged", ("captrack_probe_w2_coverage",), "coverage", COVERED, "W2", "request_response"))
declare_judged(JudgedMetric("overreach_judged", ("captrack_probe_w2_false_premise",), "overreach", OVERREACHED, "W2",
                            "context_response"))
declare_judged(JudgedMetric("faithfulness", ("captrack_probe_c4_context", "captrack_ragtruth_subset"), "faithfulness",
                            SUPPORTED, "C4", "context_response"))
declare_judged(JudgedMetric("reasoning", ("captrack_probe_c2_word_problems", "captrack_math_subset", "captrack_supergpqa_subset"),
                            "reasoning", REASONING, "C2", "reference_answer"))
declare_judged(JudgedMetric("pass_fraction", ("captrack_followbench_subset",), "constraints", Fraction(), "H1", "request_response"))
declare_judged(JudgedMetric("rating", ("captrack_probe_h4_multiturn", "captrack_mtbench_turn2", "captrack_structflowbench_turn2"),
                            "rating", Scale(1, 10), "H4", "conversation"))
# Official W2 tasks: no rule-based coverage/overreach is logged there, so the judged metrics keep the taxonomy names.
declare_judged(JudgedMetric("coverage", ("captrack_eli5_subset", "captrack_ragtruth_subset"), "coverage", COVERED, "W2",
                            "request_response"))
declare_judged(JudgedMetric("overreach", ("captrack_eli5_subset", "captrack_ragtruth_subset"), "overreach", OVERREACHED, "W2",
                            "context_response"))
# FollowBench `pass_fraction` (H1) has no judge prompt yet: the task logs it as NaN with its reason (captrack/official/configs.py).
