"""Answer scorers of the official CapTrack configs: letters, numbers, short answers, passages.

Docs are official mirror rows (``gold``, ``choices``, ``ctx``) with their ``meta`` fields; a model
that gives no extractable answer scores 0 (that is its failure), never NaN.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from captrack.metrics import extract
from captrack.metrics.registry import scorer

__all__ = ["alias_metrics", "boolq_metrics", "hotpotqa_metrics", "mc_letter_metrics", "needle_metrics", "numeric_metrics"]

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_EVIDENCE_SPAN = 6


def _letters(doc: Mapping[str, Any]) -> list[str]:
    choices = doc.get("choices") or []
    n = len(choices) if choices else 10
    return [chr(ord("A") + i) for i in range(n)]


def mc_letter_read(doc: Mapping[str, Any], response: str) -> str:
    """The option letter the response commits to ("Answer: C"), "" where it commits to none."""
    return extract.mc_letter(response, _letters(doc), [str(c) for c in doc.get("choices") or []]) or ""


@scorer("mc_letter", produces=("acc",), answer=mc_letter_read)
def mc_letter_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """1 when the letter the response commits to ("Answer: C") is the gold letter."""
    picked = mc_letter_read(doc, response)
    return {"acc": float(bool(picked) and picked == str(doc["gold"]).strip().upper())}


def numeric_read(doc: Mapping[str, Any], response: str) -> str:
    """The final number ("Answer: 18", "#### 18", else the last number), "" where there is none."""
    return extract.final_number(response) or ""


@scorer("numeric_answer", produces=("exact_match",), answer=numeric_read)
def numeric_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """1 when the final number ("Answer: 18", "#### 18", else the last number) equals the gold number."""
    return {"exact_match": float(extract.number_equal(numeric_read(doc, response) or None, str(doc["gold"])))}


def _aliases(doc: Mapping[str, Any]) -> list[str]:
    """The gold answer (a string, or a JSON list of accepted answers) plus ``aliases``."""
    from captrack.metrics.answers import string_list

    gold = str(doc["gold"])
    golds = string_list(gold) if gold.lstrip().startswith("[") else [gold]
    return [*golds, *string_list(extract.meta_field(doc, "aliases"))]


def _short_segment(doc: Mapping[str, Any], response: str) -> str:
    return extract.short_segment(response)


@scorer("alias_answer", produces=("exact_match",), answer=_short_segment)
def alias_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """1 when the short answer states the gold answer or one of its aliases, and little else."""
    return {"exact_match": float(extract.short_answer_hit(_short_segment(doc, response), _aliases(doc)))}


def _quotes_passage(evidence: str, passage: str) -> bool:
    """Whether `evidence` copies a sentence of `passage`, or a run of six of its words."""
    quoted = extract.squad_normalize(evidence)
    if not quoted:
        return False
    words = quoted.split()
    source = f" {extract.squad_normalize(passage)} "
    if len(words) < _EVIDENCE_SPAN:
        sentences = [extract.squad_normalize(s) for s in _SENTENCE.split(passage)]
        return quoted in sentences
    return any(
        f" {' '.join(words[i:i + _EVIDENCE_SPAN])} " in source for i in range(len(words) - _EVIDENCE_SPAN + 1)
    )


@scorer("boolq", produces=("acc", "evidence_hit"))
def boolq_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Yes/no correctness (the first yes/no of the answer), and whether the 'Evidence:' line quotes the passage."""
    head = extract.first_marked(response) or response.split("Evidence:")[0]
    said = _YES_NO.search(head)
    evidence = extract.labelled_line(response, "Evidence") or ""
    return {
        "acc": float(said is not None and said.group(1).lower() == str(doc["gold"]).lower()),
        "evidence_hit": float(_quotes_passage(evidence.strip('"“” '), str(doc.get("ctx") or ""))),
    }


@scorer("hotpotqa", produces=("exact_match", "evidence_hit"))
def hotpotqa_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Short-answer match, and the F1 between the paragraph titles named as evidence and the gold ones."""
    evidence = extract.labelled_line(response, "Evidence") or ""
    answer = response.split("Evidence:")[0]
    gold_titles = {extract.squad_normalize(t) for t in extract.meta_field(doc, "supporting_titles", [])}
    titles = [extract.squad_normalize(t) for t in extract.meta_field(doc, "titles", [])]
    named = {t for t in titles if t and f" {t} " in f" {extract.squad_normalize(evidence)} "}
    hits = len(named & gold_titles)
    f1 = 2 * hits / (len(named) + len(gold_titles)) if named and gold_titles else 0.0
    return {"exact_match": float(extract.short_answer_hit(extract.short_segment(answer), _aliases(doc))), "evidence_hit": f1}


@scorer("needle", produces=("exact_match",))
def needle_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """RULER needle retrieval: 1 when every gold value (``gold``, or the ``needles`` list) is in the response."""
    from captrack.metrics.answers import string_list

    needles = string_list(extract.meta_field(doc, "needles")) or [str(doc["gold"])]
    lowered = response.casefold()
    return {"exact_match": float(all(n.casefold() in lowered for n in needles))}
