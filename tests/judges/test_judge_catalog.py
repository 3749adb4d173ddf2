"""Judged-metric declarations, prompt files and verdict parsing, read as specifications."""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import pytest
import yaml

from captrack.judges import all_judged
from captrack.judges.catalog import REFUSED, SUPPORTED, get_inputs
from captrack.judges.prompts import PROMPTS_DIR, load_prompt
from captrack.judges.reply_parsing import Fraction, Labels, Scale, VerdictParser
from captrack.metrics import get_metric
from captrack.taxonomy import load_taxonomy

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "verdicts.yaml").read_text())
PARSERS: dict[str, VerdictParser] = {"refusal": REFUSED, "support": SUPPORTED, "rating": Scale(1, 10),
                                     "reasoning": Scale(1, 5, to_low=0.0, to_high=1.0), "share": Fraction()}

# The text of each prompt at its version: editing a prompt without bumping its version fails here
# (the version is in every judged row; the cache key also covers the rendered text).
PROMPT_DIGESTS = {
    "constraints": (1, "712932bf"),
    "coverage": (1, "89e9d8d6"),
    "faithfulness": (1, "558ef2f8"),
    "overreach": (1, "9ae85230"),
    "rating": (1, "06e2ae6d"),
    "reasoning": (1, "ca1eb302"),
    "refusal": (1, "506b71f8"),
}


@pytest.mark.parametrize("case", CASES, ids=[f"{c['parser']}:{c['reply'][:30]!r}" for c in CASES])
def test_verdict_parsing(case: dict) -> None:
    verdict = PARSERS[case["parser"]].parse(case["reply"])
    if isinstance(case["expected"], float):
        assert verdict.ok and verdict.value == pytest.approx(case["expected"]) and verdict.rule == case["rule"], case["why"]
    else:
        assert math.isnan(verdict.value) and verdict.code == case["expected"], case["why"]


@pytest.mark.parametrize("spec", all_judged(), ids=lambda s: s.metric)
def test_declaration_agrees_with_taxonomy_metrics_and_prompt(spec) -> None:  # type: ignore[no-untyped-def]
    metric = get_metric(spec.metric)
    taxonomy = load_taxonomy()
    for task in spec.tasks:
        (member,) = taxonomy.members_of(task, spec.metric)
        assert member.capability == spec.capability
    prompt = load_prompt(spec.prompt)
    get_inputs(spec.inputs)
    text = prompt.system + prompt.user
    if isinstance(spec.parser, Labels):
        assert all(label in text for label in spec.parser.values)  # the prompt asks for exactly these labels
        assert set(spec.parser.values.values()) <= {0.0, 0.5, 1.0}
        assert metric.kind in ("binary", "score")
    elif isinstance(spec.parser, Fraction):
        assert "k/n" in text  # the prompt asks for the count in the form the parser reads
    else:
        assert isinstance(spec.parser, Scale)
        assert re.search(rf"from {spec.parser.low:g}\b.*?to {spec.parser.high:g}\b", text, re.S)  # the prompt states the scale


def test_prompt_versions_pin_their_text() -> None:
    found = {}
    for path in sorted(PROMPTS_DIR.glob("*.yaml")):
        prompt = load_prompt(path.stem)
        digest = hashlib.sha256((prompt.system + "\0" + prompt.user).encode()).hexdigest()[:8]
        found[prompt.name] = (prompt.version, digest)
    assert found == PROMPT_DIGESTS, "a prompt's text changed: bump its version (and its changelog), then update PROMPT_DIGESTS"


def test_render_fills_only_declared_fields() -> None:
    prompt = load_prompt("refusal")
    messages = prompt.render({"request": "Say {hi} to {response}", "response": "ok"})
    assert messages[0]["role"] == "system" and "Say {hi} to {response}" in messages[1]["content"]
    with pytest.raises(Exception, match="no value for field"):
        prompt.render({"request": "x"})
