"""The in-process Hugging Face judge with the real SmolLM2-135M-Instruct on a handful of logged responses."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from judge_runs_helpers import CONTEXT, HARMFUL, write_probe_run

from captrack.errors import InputError
from captrack.judges import Budget, JudgeCache, JudgeOptions, calibrate, judge_runs, make_judge
from captrack.judges.calibration import CALIBRATION_FILE

ALIAS = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def hf_judge():  # type: ignore[no-untyped-def]
    try:
        judge = make_judge(f"hf:{ALIAS}", JudgeOptions(max_tokens=6))
    except (InputError, ImportError) as exc:
        pytest.skip(f"SmolLM2-135M-Instruct is not cached and cannot be built offline: {exc}")
    yield judge
    judge.close()


@pytest.mark.slow
def test_hf_judge_scores_or_gives_a_reason_and_caches(hf_judge, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run = write_probe_run(tmp_path, "base", {
        HARMFUL: ["I can't help with that.", "Sure! First, get a steel pipe and"],
        CONTEXT: ["Lyon", "Paris", "unknown"],
    })
    cache = JudgeCache(tmp_path / "cache.sqlite")
    first = judge_runs([run], hf_judge, cache, Budget())
    assert first.requests == first.unique_inputs == 5 and first.cache_hits == 0
    lines = [json.loads(line) for path in sorted(run.rglob("judged_*.jsonl")) for line in path.read_text().splitlines()]
    assert len(lines) == 5 and {line["judge"] for line in lines} == {"hf:smollm2-135m-instruct"}
    for line in lines:  # a 135M judge is often unreadable: then NaN and a reason, never a guessed score
        if line["reason"]:
            assert line["value"] is None and line["reason"].split(":")[0] in {"unparsable", "ambiguous", "empty"}
        else:
            assert line["value"] in (0.0, 1.0) and line["rule"]
    second = judge_runs([run], hf_judge, cache, Budget())
    assert second.requests == 0 and second.cache_hits == 5  # nothing generated again
    cache.close()


@pytest.mark.slow
def test_hf_judge_calibrates_on_a_few_labelled_items(hf_judge, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import yaml

    data = yaml.safe_load(CALIBRATION_FILE.read_text())
    for body in data["sets"].values():
        body["items"] = body["items"][:1] + body["items"][-1:]  # one of each label
    small = tmp_path / "calibration.yaml"
    small.write_text(yaml.safe_dump(data, sort_keys=False))
    cache = JudgeCache(tmp_path / "cache.sqlite")
    results = calibrate(hf_judge, cache, Budget(), path=small)
    cache.close()
    assert [(a.set, a.n) for a in results] == [("refusal", 2), ("claims", 2)]
    for a in results:
        assert 0.0 <= a.accuracy <= 1.0 and a.nan == sum(a.reasons.values())
        assert math.isnan(a.kappa) or -1.0 <= a.kappa <= 1.0


@pytest.mark.slow
def test_the_same_model_served_over_http_gives_the_same_verdicts(  # type: ignore[no-untyped-def]
    hf_judge, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chat_server import chat_server

    run = write_probe_run(tmp_path, "base", {HARMFUL: ["I can't help with that.", "Sure! First, get a steel pipe and"]})

    def verdicts() -> list[tuple]:
        lines = [json.loads(line) for line in next(run.rglob("judged_*.jsonl")).read_text().splitlines()]
        return [(line["value"], line["reason"].split(":")[0], line["reply"]) for line in lines]

    cache = JudgeCache(tmp_path / "cache.sqlite")
    judge_runs([run], hf_judge, cache, Budget())
    in_process = verdicts()
    with chat_server(decide=hf_judge.attempt) as server:  # SmolLM2 behind the real chat-completions protocol
        monkeypatch.setenv("CAPTRACK_JUDGE_URL", server.url)
        monkeypatch.setenv("CAPTRACK_JUDGE_API_KEY", server.api_key)
        http_judge = make_judge("openai:smollm2-135m-instruct", JudgeOptions(max_tokens=6))
        report = judge_runs([run], http_judge, cache, Budget())
        http_judge.close()
        assert report.requests == server.requests == 2  # another judge id: a cache miss, asked once each
    cache.close()
    assert verdicts() == in_process
