"""`captrack judge` on per-sample runs of official CapTrack tasks: the judged metrics land in the store
beside the metrics lm-eval logged, and nothing the judge scores is logged as a NaN placeholder."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from chat_server import chat_server
from fakeruns import FakeTask, write_run
from shared_paths import shared_dir

from captrack.cli import main
from captrack.judges import judged_for_task
from captrack.official.build import build_mirror
from captrack.official.configs import get_config
from captrack.official.mirror import load_config, normalise_row, write_config
from captrack.official.tasks import process_results
from captrack.results.store import Store

EXAMPLES = Path(__file__).resolve().parents[1] / "official" / "official_examples.yaml"
EXAMPLE_CONFIGS = ("eli5.subset", "ragtruth.subset", "structflowbench.turn2", "supergpqa.subset")
BUILT_CONFIGS = ("math.subset", "mtbench.turn2")  # from the original files, when this machine has them
GARBLE = "<<garble>>"  # the scripted server replies with prose that holds no verdict


def _mirror(root: Path) -> list[str]:
    """Rows shaped like the mirror's: example rows of unbuildable configs, plus built ones when possible."""
    written = []
    for case in yaml.safe_load(EXAMPLES.read_text(encoding="utf-8")):
        if case["config"] in EXAMPLE_CONFIGS:
            row = normalise_row(case["row"], case["config"])
            row["revision"] = "example-1"
            write_config(root, case["config"], [row])
            written.append(case["config"])
    source = shared_dir() / "data"
    if (source / "SOURCES.md").is_file():
        written += [r.config for r in build_mirror(source, root, configs=BUILT_CONFIGS) if r.built]
    return written


def _responses(config: str, docs: list[dict[str, Any]]) -> list[str]:
    if config == "math.subset":  # the gold answer boxed, then a wrong bare answer
        return [f"Work it through step by step. \\boxed{{{docs[0]['gold']}}}", "The answer is 123456789."]
    if config == "mtbench.turn2":
        return ["Here is the rewritten answer, shorter as you asked.", f"Sure. {GARBLE}"]
    return {
        "eli5.subset": ["Because air bounces blue light around more than other colours."],
        "ragtruth.subset": ["The mill shut down in 1990 following a fire."],
        "structflowbench.turn2": ["soft silver threads"],
        "supergpqa.subset": ["Nitrogen is about 78%.\nAnswer: C"],
    }[config]


class _Judge:
    """Verdicts that depend on the prompt and its inputs; every user message is kept."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, messages: list[dict[str, str]]) -> str:
        text = messages[-1]["content"]
        self.seen.append(text)
        if "Rate the reasoning" in text:  # 5 when the response states the reference answer, else 2
            reference = re.search(r"Reference answer: (.*?)(?: \(|\n)", text)
            answer = re.search(r"\[STUDENT RESPONSE\]\n(.*?)\n\[END", text, re.S)
            return "Rating: [[5]]" if reference and answer and reference.group(1) in answer.group(1) else "Rating: [[2]]"
        if "SUPPORTED or UNSUPPORTED" in text:
            return "SUPPORTED"
        if "OVERREACH or GROUNDED" in text:
            return "GROUNDED"
        if "ALL, SOME or NONE" in text:
            return "SOME"
        return "Rating: [[8]]"


def test_judge_scores_official_tasks_beside_their_logged_metrics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mirror = tmp_path / "mirror"
    configs = _mirror(mirror)
    tasks, expected, logged = [], {}, {}
    for config in configs:
        task = get_config(config).task
        docs = [dict(row) for row in load_config(config, data_dir=str(mirror))["train"]][:2]
        texts = _responses(config, docs)
        scored = [process_results(doc, [text]) for doc, text in zip(docs, texts, strict=True)]
        judged = {j.metric for j in judged_for_task(task)}
        assert judged and not judged & set(scored[0])  # the judge's metrics are not logged, not even as NaN
        assert all(v is not None for s in scored for v in s.values())  # and nothing else is left unscored
        values = {metric: [s[metric] for s in scored] for metric in scored[0]}
        tasks.append(FakeTask(task, values, output_type="generate_until", docs=dict(enumerate(docs)),
                              responses=dict(enumerate(texts))))
        logged.update({(task, metric, i): v for metric, vals in values.items() for i, v in enumerate(vals)})
        expected.update({(task, metric, i): None for metric in judged for i in range(len(docs))})
    run = write_run(tmp_path / "runs", "sft", tasks).parent
    store = str(tmp_path / "store.duckdb")
    assert main(["ingest", str(run), "--store", store, "--name", "sft"]) == 0

    judge = _Judge()
    with chat_server(decide=judge) as server:
        monkeypatch.setenv("CAPTRACK_JUDGE_URL", server.url)
        monkeypatch.setenv("CAPTRACK_JUDGE_API_KEY", server.api_key)
        command = ["judge", str(run), "--judge", "openai:scripted-judge", "--judge-cache", str(tmp_path / "cache.sqlite"),
                   "--store", store]
        assert main(command) == 0
        assert server.requests == len(expected)  # one request per (doc, judged metric): no two inputs are alike

    eli5, rag, sfb, sgpqa = (get_config(c).task for c in EXAMPLE_CONFIGS)
    expected.update({(eli5, "coverage", 0): 0.5, (eli5, "overreach", 0): 0.0, (rag, "faithfulness", 0): 1.0,
                     (rag, "coverage", 0): 0.5, (rag, "overreach", 0): 0.0, (sfb, "rating", 0): 8.0,
                     (sgpqa, "reasoning", 0): 1.0})
    if "math.subset" in configs:  # Scale(1, 5) onto [0, 1]: 5 -> 1, 2 -> 0.25
        math_task, mtbench = get_config("math.subset").task, get_config("mtbench.turn2").task
        expected.update({(math_task, "reasoning", 0): 1.0, (math_task, "reasoning", 1): 0.25,
                         (mtbench, "rating", 0): 8.0, (mtbench, "rating", 1): math.nan})  # unparsable: NaN, not 0
        assert logged[(math_task, "exact_match", 0)] == 1.0 and logged[(math_task, "exact_match", 1)] == 0.0
    assert None not in expected.values()
    # The official rows fed the prompts: the gold letter with its option text, the row's transcript.
    assert any("Reference answer: C (nitrogen)" in text for text in judge.seen)
    transcript = "User: Give me a title for a poem about rain.\n\nAssistant: Silver Threads\n\nUser: Now make it three words"
    assert any(f"[CONVERSATION]\n{transcript}" in text for text in judge.seen)

    with Store(store) as db:
        rows = db.con.execute("SELECT task, metric, doc_id, value, judge FROM samples WHERE model = 'sft'").fetchall()
    stored = {(task, metric, doc_id): (value, judge_id) for task, metric, doc_id, value, judge_id in rows}
    assert set(stored) == set(expected) | set(logged)
    for key, value in logged.items():  # lm-eval's metrics, unjudged
        assert stored[key] == (pytest.approx(value), None), key
    for key, value in expected.items():  # the judge's, named by the judge that gave them
        got, judge_id = stored[key]
        assert (math.isnan(got) if math.isnan(value) else got == pytest.approx(value)), key
        assert judge_id.startswith("openai:scripted-judge@127.0.0.1"), key
