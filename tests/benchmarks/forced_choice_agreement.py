"""Item-level agreement of each forced-choice twin with its generative twin, from two lm-eval runs.

    python tests/benchmarks/forced_choice_agreement.py FC_RUN_DIR GEN_RUN_DIR [GEN_RUN_DIR ...]

Reads the samples_*.jsonl of both runs (same seed and n: the twins ask the same items by index) and
prints, per forced-choice task: n, its accuracy and chance, the generative twin's rate on the same
items, and agreement (the share of items where both say the same: right forced choice <-> the
generation did the right thing). W1 contrast: the generation is right on a pair when the harmful
request is refused and the benign one answered, wrong when the reverse, and undecided (left out) when
both got the same treatment; and per request: refusal preferred (a plain two-option reading of the
margin) against refused in generation. Every contrast task also prints how often the gold option is
the likelier one in the probe context and in the control context alone. Prints figures; asserts nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from captrack.probes.twins import forced_choice_twins

# forced-choice task -> (its metric, its twin's metric, the twin's "right" value); the twin is the task's own TWIN_OF
MEASURES = {
    "captrack_probe_w2_false_premise_choice": ("contrast_acc", "overreach", 0.0),
    "captrack_probe_h5_retrieval_choice": ("acc", "exact_match", 1.0),
    "captrack_probe_h6_citations_choice": ("acc", "citation_source", 1.0),
    "captrack_probe_h3_tools_choice": ("contrast_acc", "tool_selection", 1.0),
    # H4: only level-1 items ask the same conversation (the recall question) in both twins
    "captrack_probe_h4_multiturn_choice": ("contrast_acc", "pass_all", 1.0),
}
PAIRS = {task: (metric, forced_choice_twins()[task][0], twin_metric, right)
         for task, (metric, twin_metric, right) in MEASURES.items()}


def _samples(dirs: list[Path], task: str) -> dict[str, dict[str, Any]]:
    """The task's per-sample rows by prompt (the first run that holds the task wins)."""
    for folder in dirs:
        files = sorted(folder.rglob(f"samples_{task}_*.jsonl"))
        if files:
            rows = [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]
            return {row["doc"]["prompt"]: row for row in rows}
    return {}


def _line(name: str, pairs: list[tuple[float, float]], chance: float, twin_rate: float) -> str:
    n = len(pairs)
    if not n:
        return f"{name}: no paired items"
    accuracy = sum(a for a, _ in pairs) / n
    agree = sum(a == b for a, b in pairs) / n
    independent = accuracy * twin_rate + (1 - accuracy) * (1 - twin_rate)  # what unrelated items would give
    return (f"{name}: n {n}, forced-choice accuracy {accuracy:.3f} (chance {chance:.3f}), "
            f"generative twin right on {twin_rate:.3f} of them, agreement {agree:.3f} "
            f"(independent items would agree {independent:.3f})")


def _plain(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """Share of contrast items whose gold option (index 0) is the likelier one in the probe / in the control."""
    ll = [[float(r[0][0]) for r in row["resps"]] for row in rows]
    return sum(x[0] > x[1] for x in ll) / len(ll), sum(x[2] > x[3] for x in ll) / len(ll)


def _tools_named(ours: dict[str, dict[str, Any]], theirs: dict[str, dict[str, Any]]) -> None:
    """H3 on the generations that name an offered tool at all: did they name the right one first?"""
    from captrack.probes.tools import TOOLS

    pairs = []
    for prompt, row in ours.items():
        if prompt not in theirs:
            continue
        response = str(theirs[prompt]["resps"][0][0])
        named = [t for t in TOOLS if t in response]
        if named:
            pairs.append((float(row["contrast_acc"]), float(min(named, key=response.index) == row["doc"]["kind"])))
    rate = sum(b for _, b in pairs) / max(len(pairs), 1)
    print(_line(f"captrack_probe_h3_tools_choice on the generations naming a tool ({len(pairs)} of {len(ours)})",
                pairs, 0.5, rate))


def main(fc_dir: Path, gen_dirs: list[Path]) -> None:
    """Print one line per forced-choice task that both runs hold."""
    for task, (metric, twin, twin_metric, right) in PAIRS.items():
        ours, theirs = _samples([fc_dir], task), _samples(gen_dirs, twin)
        if ours and metric == "contrast_acc":
            probe, control = _plain(list(ours.values()))
            print(f"{task}: gold likelier in the probe context {probe:.3f}, in the control {control:.3f} "
                  f"({len(ours)} items)")
        common = [p for p in ours if p in theirs]
        pairs = [(float(ours[p][metric]), float(float(theirs[p][twin_metric]) == right)) for p in common]
        chance = sum(1 / len(ours[p]["doc"]["choices"]) for p in common) / max(len(common), 1)
        twin_rate = sum(b for _, b in pairs) / max(len(pairs), 1)
        print(_line(task, pairs, chance, twin_rate))
    _tools_named(_samples([fc_dir], "captrack_probe_h3_tools_choice"), _samples(gen_dirs, "captrack_probe_h3_tools"))
    w1 = _samples([fc_dir], "captrack_probe_w1_choice")
    harmful, benign = _samples(gen_dirs, "captrack_probe_w1_harmful"), _samples(gen_dirs, "captrack_probe_w1_benign")
    decided, both = [], 0
    for row in w1.values():
        doc = row["doc"]
        if doc["prompt"] in harmful and doc["control"] in benign:
            both += 1
            refused = float(harmful[doc["prompt"]]["unsafe_refusal"])
            answered = float(benign[doc["control"]]["compliance_rate"])
            if refused != 1.0 - answered:  # the two requests were treated differently
                decided.append((float(row["contrast_acc"]), refused))
    rate = sum(b for _, b in decided) / max(len(decided), 1)
    print(_line(f"captrack_probe_w1_choice ({both} pairs generated, decided ones)", decided, 0.5, rate))
    if w1:
        probe, control = _plain(list(w1.values()))
        print(f"captrack_probe_w1_choice: refusal likelier after the harmful request {probe:.3f}, "
              f"after the benign one {control:.3f} ({len(w1)} items)")
    for side, twin, first in (("harmful", harmful, 0), ("benign", benign, 2)):
        key, refused = ("prompt", "unsafe_refusal") if side == "harmful" else ("control", "compliance_rate")
        per = [(float(float(r["resps"][first][0][0]) > float(r["resps"][first + 1][0][0])),
                float(float(twin[r["doc"][key]][refused]) == (1.0 if side == "harmful" else 0.0)))
               for r in w1.values() if r["doc"][key] in twin]
        rate = sum(b for _, b in per) / max(len(per), 1)
        print(_line(f"captrack_probe_w1_choice per {side} request (refusal likelier vs refused)", per, 0.5, rate))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
