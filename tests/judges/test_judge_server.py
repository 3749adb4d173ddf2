"""Judging over real HTTP against a scripted OpenAI-compatible server: retries, NaN reasons, cache, budget."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from chat_server import ChatServer, chat_server
from judge_runs_helpers import BENIGN, CONTEXT, HARMFUL, write_probe_run

from captrack.cli import main
from captrack.judges import Budget, JudgeCache, JudgeOptions, judge_runs, make_judge
from captrack.labels import VariantLabels
from captrack.results.store import Store

REFUSE, COMPLY = "I can't help with that.", "Sure, here is how you start: first"


def _connect(monkeypatch: pytest.MonkeyPatch, server: ChatServer) -> None:
    monkeypatch.setenv("CAPTRACK_JUDGE_URL", server.url)
    monkeypatch.setenv("CAPTRACK_JUDGE_API_KEY", server.api_key)


def _verdict_lines(run: Path, task: str) -> list[dict]:
    (path,) = run.rglob(f"judged_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_judge_then_compare_reports_nan_reasons_and_a_second_run_asks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Base refuses 4 of 6 harmful requests, the variant 2; every transient failure mode is scripted once.
    base = write_probe_run(tmp_path, "base", {
        HARMFUL: [f"{REFUSE} <<429x1>>", f"{REFUSE} <<500x2>>", f"{REFUSE} <<slowx1>>", f"{REFUSE} <<badjsonx1>>",
                  COMPLY, f"{COMPLY} <<garble>>"],
        BENIGN: ["Run kill -9 with the process id.", "Use a tripod and manual focus.", "Call cursor.execute().", "Pour boiling water."],
    })
    variant = write_probe_run(tmp_path, "sft", {
        HARMFUL: [REFUSE, COMPLY, COMPLY, REFUSE, COMPLY, f"{COMPLY} <<garble>>"],
        BENIGN: ["Sorry, I can't help with killing.", "Use a tripod and manual focus.", "Call cursor.execute().", "Pour boiling water."],
    })
    out = tmp_path / "out"
    with chat_server(slow_seconds=4.0) as server:  # timeouts of seconds: a busy host never makes a quick reply late
        _connect(monkeypatch, server)
        judge = ["judge", str(base), str(variant), "--judge", "openai:scripted-judge", "--judge-cache",
                 str(tmp_path / "cache.sqlite"), "--timeout", "2", "--retries", "3", "--backoff", "0.01"]
        compare = ["compare", "--base", str(base), "--variant", f"sft={variant}:SFT", "--out", str(out), "--bootstrap", "50"]
        assert main(judge) == 0
        # 15 distinct inputs (base and variant share the last two harmful and three benign (item, response)
        # pairs), plus one retry each for the 429, the slow reply and the malformed body, two for the double 500.
        assert server.requests == 15 + 1 + 1 + 1 + 2
        waits = [t for t, marks, status in server.log if "<<429x1>>" in marks]
        assert waits[1] - waits[0] >= 0.95  # Retry-After: 1 was honoured
        assert main(compare) == 0
        first = server.requests
        summary_first = (out / "summary.json").read_text()

        assert main(judge) == 0 and main(compare) == 0  # the same comparison again
        assert server.requests == first  # zero judge calls: everything came from the cache
    assert (out / "summary.json").read_text() == summary_first

    lines = _verdict_lines(base, HARMFUL)
    assert [line["value"] for line in lines] == [1.0, 1.0, 1.0, 1.0, 0.0, None]
    assert lines[-1]["reason"].startswith("unparsable:") and lines[-1]["judge"].startswith("openai:scripted-judge@127.0.0.1")
    assert {line["prompt"] for line in lines} == {"refusal@1"}

    drift = pd.read_csv(out / "drift.csv").set_index(["task", "metric"])
    row = drift.loc[(HARMFUL, "unsafe_refusal_judged")]
    assert (row["capability"], row["base_value"], row["variant_value"]) == ("W1", 0.8, 0.4)
    assert drift.loc[(BENIGN, "compliance_rate_judged"), "variant_value"] == 0.75
    trans = pd.read_csv(out / "transitions.csv").set_index(["task", "metric"])
    assert trans.loc[(HARMFUL, "unsafe_refusal_judged"), ["n", "n_10", "n_01"]].tolist() == [5, 2, 0]

    summary = json.loads(summary_first)
    judged = summary["judged"]["base"][HARMFUL]["unsafe_refusal_judged"]
    assert (judged["n"], judged["nan"], judged["reasons"], judged["prompt"]) == (6, 1, {"unparsable": 1}, "refusal@1")
    assert summary["judged"]["sft"][BENIGN]["compliance_rate_judged"]["nan"] == 0
    report = (out / "report.md").read_text()
    assert "## Judged metrics" in report and "| base | captrack_probe_w1_harmful | unsafe_refusal_judged |" in report
    assert "unparsable 1" in report


def _judge_once(tmp_path: Path, run: Path, options: JudgeOptions, budget: Budget | None = None) -> None:
    judge = make_judge("openai:scripted-judge", options)
    cache = JudgeCache(tmp_path / f"cache-{len(list(tmp_path.glob('cache-*')))}.sqlite")
    try:
        judge_runs([run], judge, cache, budget)
    finally:
        judge.close()
        cache.close()


@pytest.mark.parametrize(
    ("responses", "env_key", "retries", "budget", "requests", "reasons"),
    [
        ([f"{REFUSE} <<500always>>"], None, 2, None, 3, ["server_error"]),
        ([f"{REFUSE} <<slowx9>>"], None, 1, None, 2, ["timeout"]),
        ([f"{REFUSE} <<badjsonx9>>"], None, 1, None, 2, ["malformed_response"]),
        ([f"{REFUSE} <<429x9>>"], None, 0, None, 1, ["rate_limited"]),
        ([f"{COMPLY} <<garble>>"], None, 3, None, 1, ["unparsable"]),
        ([REFUSE, COMPLY], "wrong-key", 3, None, 2, ["http_401", "http_401"]),
        ([REFUSE, COMPLY, f"{REFUSE} x", f"{COMPLY} y"], None, 3, 2, 2, ["", "", "budget", "budget"]),
    ],
    ids=["500-always", "timeouts", "malformed-json", "429-no-retries", "unparsable", "bad-key", "budget"],
)
def test_no_failure_mode_yields_a_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, responses: list[str], env_key: str | None, retries: int,
    budget: int | None, requests: int, reasons: list[str],
) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: responses})
    with chat_server(slow_seconds=3.0) as server:  # past the timeout; the timeout far past a quick reply under load
        _connect(monkeypatch, server)
        if env_key:
            monkeypatch.setenv("CAPTRACK_JUDGE_API_KEY", env_key)
        options = JudgeOptions(timeout=1.5, retries=retries, backoff=0.01, max_backoff=0.05, concurrency=1)
        _judge_once(tmp_path, run, options, Budget(budget))
        assert server.requests == requests
    lines = _verdict_lines(run, HARMFUL)
    assert [line["reason"].split(":")[0] for line in lines] == reasons
    for line in lines:
        assert (line["value"] is None) == bool(line["reason"])
    with Store() as store:  # in the store a failed verdict is NaN, never a default score
        from captrack.results.runfiles import discover_runs

        store.ingest(discover_runs(run), VariantLabels(name="base"))
        values = store.con.execute(
            "SELECT value FROM samples WHERE metric = 'unsafe_refusal_judged' ORDER BY doc_id").fetchall()
    assert [math.isnan(v) for (v,) in values] == [bool(r) for r in reasons]


def test_concurrency_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: [f"{REFUSE} {i}" for i in range(9)]})
    with chat_server(hold=0.15) as server:
        _connect(monkeypatch, server)
        _judge_once(tmp_path, run, JudgeOptions(concurrency=3, backoff=0.01))
        assert server.requests == 9 and 2 <= server.max_in_flight <= 3


def test_compare_refuses_base_and_variant_judged_by_different_judges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_probe_run(tmp_path, "base", {CONTEXT: ["Lyon", "Paris", "unknown"]})
    variant = write_probe_run(tmp_path, "sft", {CONTEXT: ["Lyon", "Lyon", "unknown"]})
    with chat_server() as server:
        _connect(monkeypatch, server)
        for run, model in ((base, "judge-a"), (variant, "judge-b")):
            assert main(["judge", str(run), "--judge", f"openai:{model}", "--judge-cache", str(tmp_path / "c.sqlite")]) == 0
    status = main(["compare", "--base", str(base), "--variant", f"sft={variant}", "--out", str(tmp_path / "out")])
    assert status == 1 and not (tmp_path / "out" / "drift.csv").exists()
    message = " ".join(capsys.readouterr().err.split())
    assert "captrack_probe_c4_context/faithfulness is judged by openai:judge-a@" in message and "openai:judge-b@" in message


def test_judge_with_store_reingests_so_store_comparisons_see_the_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = write_probe_run(tmp_path, "base", {CONTEXT: ["Lyon", "Paris, <<garble>>", "unknown"]})
    variant = write_probe_run(tmp_path, "sft", {CONTEXT: ["Lyon", "an invented city", "an invented town"]})
    store = str(tmp_path / "store.duckdb")
    assert main(["ingest", str(base), "--store", store, "--name", "base"]) == 0
    assert main(["ingest", str(variant), "--store", store, "--name", "sft", "--algorithm", "DPO"]) == 0
    with chat_server() as server:
        _connect(monkeypatch, server)
        judge = ["judge", "--judge", "openai:j", "--judge-cache", str(tmp_path / "c.sqlite"), "--store", store]
        assert main([*judge, str(base), str(variant)]) == 0
    assert main(["compare", "--store", store, "--base", "base", "--variant", "sft:DPO", "--out", str(tmp_path / "out")]) == 0
    drift = pd.read_csv(tmp_path / "out" / "drift.csv").set_index(["task", "metric"])
    row = drift.loc[(CONTEXT, "faithfulness")]
    assert (row["algorithm"], row["capability"], row["base_value"], row["variant_value"]) == ("DPO", "C4", 1.0, 0.5)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["judged"]["base"][CONTEXT]["faithfulness"]["reasons"] == {"unparsable": 1}
    assert summary["counts"]["sft"]["nan_excluded"] == {f"{CONTEXT}/faithfulness": 1}


def test_the_judge_reads_the_model_text_not_a_filter_extraction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: [REFUSE, COMPLY]})
    (samples,) = run.rglob(f"samples_{HARMFUL}_*.jsonl")
    lines = [json.loads(line) for line in samples.read_text().splitlines()]
    extracted = [{**line, "filter": "first-word", "filtered_resps": [line["resps"][0][0].split()[0]]} for line in lines]
    samples.write_text("".join(json.dumps(line) + "\n" for line in lines + extracted))  # a second filter, as lm-eval logs it
    with chat_server() as server:
        _connect(monkeypatch, server)
        _judge_once(tmp_path, run, JudgeOptions(backoff=0.01))
        assert server.requests == 2  # one request per response, shared by both filters
    verdicts = {(line["filter"], line["doc_id"]): line["value"] for line in _verdict_lines(run, HARMFUL)}
    # "I" alone would read as compliance: the verdicts come from the full responses.
    assert verdicts == {("none", 0): 1.0, ("none", 1): 0.0, ("first-word", 0): 1.0, ("first-word", 1): 0.0}


def test_an_unreachable_server_is_a_transport_failure_not_a_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("CAPTRACK_JUDGE_URL", f"http://127.0.0.1:{port}/v1")
    run = write_probe_run(tmp_path, "base", {HARMFUL: [REFUSE]})
    _judge_once(tmp_path, run, JudgeOptions(retries=1, backoff=0.01))
    (line,) = _verdict_lines(run, HARMFUL)
    assert line["value"] is None and line["reason"].startswith("transport: ConnectError") and "after 2 attempts" in line["reason"]
