"""Per-sample run folders of probe tasks (real generated items, scripted responses) for judge tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from fakeruns import FakeTask, write_run

from captrack.metrics import score
from captrack.probes import generate

HARMFUL = "captrack_probe_w1_harmful"
BENIGN = "captrack_probe_w1_benign"
CONTEXT = "captrack_probe_c4_context"

# task -> (probe generator, the task's rule-based scorer)
PROBES = {HARMFUL: ("harmful", "refusal"), BENIGN: ("benign", "compliance"), CONTEXT: ("context", "short_answer")}


def write_probe_run(root: Path, model: str, responses: Mapping[str, Sequence[str]], seed: int = 0) -> Path:
    """One lm-eval run folder: each task's first len(responses) generated items, answered with `responses`,
    its rule-based metric scored by the task's real scorer. Returns the run folder."""
    tasks = []
    for task, texts in responses.items():
        probe_name, scorer = PROBES[task]
        docs = generate(probe_name, seed=1234, n=len(texts))
        scored = [score(scorer, doc, text) for doc, text in zip(docs, texts, strict=True)]
        values = {metric: [s[metric] for s in scored] for metric in scored[0]}
        tasks.append(FakeTask(task, values, output_type="generate_until", docs=dict(enumerate(docs)),
                              responses=dict(enumerate(texts))))
    write_run(root / model, model, tasks, seed=seed, date_id=f"2026-01-01T00-00-0{seed}.000000")
    return root / model
