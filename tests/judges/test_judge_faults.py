"""A judge server that trickles, floods, answers null or leaks: bounded time, bounded memory, nothing lost or leaked.

Everything goes through the CLI (`captrack judge`) against the scripted server on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from chat_server import ChatServer, chat_server
from judge_runs_helpers import HARMFUL, write_probe_run

from captrack.cli import main
from captrack.judges import JudgeCache
from captrack.judges.redact import Secrets, redact_url

REFUSE, COMPLY = "I can't help with that.", "Sure, here is how you start: first"
KEY = "sk-captrack-SECRET-0123456789"


def _connect(monkeypatch: pytest.MonkeyPatch, server: ChatServer) -> None:
    monkeypatch.setenv("CAPTRACK_JUDGE_URL", server.url)
    monkeypatch.setenv("CAPTRACK_JUDGE_API_KEY", server.api_key)


def _judge(run: Path, cache: Path, *extra: str, model: str = "scripted-judge") -> int:
    return main(["judge", str(run), "--judge", f"openai:{model}", "--judge-cache", str(cache), *extra])


def _verdicts(run: Path) -> list[dict]:
    (path,) = run.rglob(f"judged_{HARMFUL}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def _reasons(run: Path) -> list[str]:
    return [line["reason"].split(":")[0] for line in _verdicts(run)]


def _cached(path: Path) -> int:
    cache = JudgeCache(path)
    try:
        return len(cache)
    finally:
        cache.close()


@contextmanager
def _peak_rss_growth() -> Iterator[list[int]]:
    """Samples this process's resident memory every 5 ms; yields [growth of the peak over the start, in bytes]."""
    process = psutil.Process()
    start = process.memory_info().rss
    peak = [start]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            stop.wait(0.005)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    growth = [0]
    try:
        yield growth
    finally:
        stop.set()
        thread.join()
        growth[0] = max(peak[0], process.memory_info().rss) - start


def test_a_trickling_reply_is_cut_at_one_deadline_per_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The reply (about 300 bytes) arrives one byte every 0.5 s: each read is quick, the whole takes minutes.
    run = write_probe_run(tmp_path, "base", {HARMFUL: [f"{REFUSE} <<trickle>>"]})
    warm = write_probe_run(tmp_path, "warm", {HARMFUL: [REFUSE]})
    timeout, retries, backoff = 1.0, 1, 0.01
    with chat_server(trickle_seconds=0.5) as server:
        _connect(monkeypatch, server)
        assert _judge(warm, tmp_path / "warm.sqlite") == 0  # a normal reply first: imports are not timed below
        server.requests = 0
        start = time.monotonic()
        status = _judge(run, tmp_path / "c.sqlite", "--timeout", str(timeout), "--retries", str(retries),
                        "--backoff", str(backoff))
        elapsed = time.monotonic() - start
        assert server.requests == retries + 1
    # A bound on behaviour, generous for a loaded machine: without a total deadline this takes minutes.
    assert elapsed <= timeout * (retries + 1) + backoff + 15.0  # the CLI's own work on a busy 2-core host
    assert status == 1 and _reasons(run) == ["timeout"]
    assert "judged 0 of 1 verdict(s); failed 1" in capsys.readouterr().out


def test_a_flooding_reply_is_refused_at_the_cap_without_buffering_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: [f"{REFUSE} <<flood>>"]})
    with chat_server(flood_bytes=150_000_000) as server:  # 150 MB, streamed without a Content-Length
        _connect(monkeypatch, server)
        with _peak_rss_growth() as growth:
            status = _judge(run, tmp_path / "c.sqlite", "--retries", "2", "--backoff", "0.01")
        assert server.requests == 1  # a reply too large once is too large again: not retried
    assert growth[0] < 100 * 2**20, f"client memory grew by {growth[0] / 2**20:.0f} MiB"
    (line,) = _verdicts(run)
    assert line["value"] is None and line["reason"].startswith("too_large:") and "1000000 bytes" in line["reason"]
    assert status == 1 and _cached(tmp_path / "c.sqlite") == 0
    assert "judged 0 of 1 verdict(s); failed 1" in capsys.readouterr().out


def test_the_reply_cap_is_configurable_and_a_declared_length_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: [REFUSE, COMPLY]})
    with chat_server() as server:  # ordinary replies of about 300 bytes, with a Content-Length
        _connect(monkeypatch, server)
        assert _judge(run, tmp_path / "c.sqlite", "--max-reply-bytes", "100") == 1
        assert _reasons(run) == ["too_large", "too_large"]
        assert _judge(run, tmp_path / "c.sqlite", "--max-reply-bytes", "2000") == 0
    assert [line["value"] for line in _verdicts(run)] == [1.0, 0.0]


def test_null_or_blank_content_is_nan_and_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first attempt at each input gets content null / "", every later one a real verdict.
    run = write_probe_run(tmp_path, "base", {HARMFUL: [f"{REFUSE} <<nullx1>>", f"{COMPLY} <<blankx1>>"]})
    cache = tmp_path / "c.sqlite"
    with chat_server() as server:
        _connect(monkeypatch, server)
        assert _judge(run, cache, "--retries", "3") == 1
        assert server.requests == 2  # an empty reply is not a transient failure: not retried
        assert _reasons(run) == ["empty_reply", "empty_reply"] and _cached(cache) == 0
        assert "judged 0 of 2 verdict(s); failed 2" in capsys.readouterr().out

        assert _judge(run, cache) == 0  # the same cache: the items are asked again, not stuck at NaN
        assert server.requests == 4
    assert [line["value"] for line in _verdicts(run)] == [1.0, 0.0] and _cached(cache) == 2
    assert "judged 2 of 2 verdict(s); failed 0" in capsys.readouterr().out


def test_a_failing_rerun_keeps_the_earlier_valid_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: [REFUSE, COMPLY, f"{REFUSE} again"]})
    with chat_server() as server:  # one server (one judge id), three passes, each with a fresh cache
        _connect(monkeypatch, server)
        assert _judge(run, tmp_path / "first.sqlite") == 0
        (path,) = run.rglob(f"judged_{HARMFUL}_*.jsonl")
        complete = path.read_bytes()
        capsys.readouterr()

        server.down_for = ""  # every request fails
        assert _judge(run, tmp_path / "second.sqlite", "--retries", "0") == 1
        assert path.read_bytes() == complete  # nothing judged: the file is left as it was
        captured = capsys.readouterr()
        assert "judged 0 of 3 verdict(s); failed 3" in captured.out and "left as it was" in captured.err

        server.down_for = "again"  # only the third item fails
        assert _judge(run, tmp_path / "third.sqlite", "--retries", "0") == 0
    assert [line["value"] for line in _verdicts(run)] == [1.0, 0.0, 1.0]  # the third is the earlier verdict
    assert all(line["reason"] == "" for line in _verdicts(run))
    captured = capsys.readouterr()
    assert "judged 2 of 3 verdict(s); failed 1" in captured.out and "kept 1 earlier verdict(s)" in captured.err


@pytest.mark.parametrize("where", ["userinfo", "query"])
def test_a_key_in_the_judge_url_reaches_no_output_file_cache_or_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    responses = [REFUSE, COMPLY, f"{REFUSE} <<echoreply>>", f"{COMPLY} <<echokey>>"]
    base = write_probe_run(tmp_path / "runs", "base", {HARMFUL: responses})
    variant = write_probe_run(tmp_path / "runs", "sft", {HARMFUL: [COMPLY, COMPLY, *responses[2:]]})
    out = tmp_path / "out"
    with chat_server(api_key=KEY) as server:
        host = server.url.removeprefix("http://")
        url = f"http://judge-user:{KEY}@{host}" if where == "userinfo" else f"{server.url}?api-key={KEY}&api-version=1"
        monkeypatch.setenv("CAPTRACK_JUDGE_URL", url)
        monkeypatch.delenv("CAPTRACK_JUDGE_API_KEY", raising=False)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        cache = tmp_path / "cache" / "judges.sqlite"
        assert main(["judge", str(base), str(variant), "--judge", "openai:scripted-judge", "--judge-cache", str(cache),
                     "--retries", "0"]) == 0
        assert main(["compare", "--base", str(base), "--variant", f"sft={variant}", "--out", str(out), "--bootstrap", "0"]) == 0
    lines = _verdicts(base)
    assert {line["judge"] for line in lines} == {f"openai:scripted-judge@{host}"}  # the key really was sent: verdicts came
    assert [line["value"] for line in lines] == [1.0, 0.0, 1.0, None] and lines[3]["reason"].startswith("http_400")
    assert "***" in lines[2]["reply"] and "***" in lines[3]["reason"]  # what the server echoed, scrubbed
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert (out / "report.md").is_file() and (out / "summary.json").is_file() and any(p.suffix == ".sqlite" for p in written)
    leaks = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    assert leaks == []
    captured = capsys.readouterr()
    assert KEY not in captured.out + captured.err and "judged 6 of 8" in captured.out


def test_redaction_masks_credentials_and_secret_query_values() -> None:
    url = f"https://me:{KEY}@judge.example:8443/v1/?api-key={KEY}&api-version=2024-06-01"
    assert redact_url(url) == "https://judge.example:8443/v1/?api-key=***&api-version=2024-06-01"
    assert Secrets.of(url).scrub(f"401: key {KEY} refused for user me") == "401: key *** refused for user me"


def test_a_bad_judge_url_is_refused_without_showing_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: [REFUSE]})
    monkeypatch.setenv("CAPTRACK_JUDGE_URL", f"ftp://me:{KEY}@judge.example/v1")
    assert _judge(run, tmp_path / "c.sqlite") == 1
    message = " ".join(capsys.readouterr().err.split())
    assert "'ftp://judge.example/v1' (CAPTRACK_JUDGE_URL): expected http(s)://" in message and KEY not in message
    assert not list(run.rglob("judged_*"))


def test_blank_replies_are_never_cached_and_a_blank_cached_earlier_reads_as_absent(tmp_path: Path) -> None:
    import sqlite3

    cache = JudgeCache(tmp_path / "c.sqlite")
    cache.put("k1", "judge", "refusal@1", "  \n")
    assert len(cache) == 0 and cache.get("k1") is None
    cache.close()
    with sqlite3.connect(tmp_path / "c.sqlite") as con:  # what captrack before this fix stored for content: null
        con.execute("INSERT INTO replies VALUES ('k2', 'judge', 'refusal@1', '', 0)")
    cache = JudgeCache(tmp_path / "c.sqlite")
    assert cache.get("k2") is None
    cache.close()
