"""A judge key given raw, as URL ``user:password`` or as a path segment reaches no file, in no encoding.

Every file that judge, ingest, compare, leaderboard, import and run write is read back as bytes (the
.duckdb store and the SQLite cache included) and searched for the key, for base64 of ``user:password``
and for every 8-character fragment of either.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from chat_server import chat_server
from judge_runs_helpers import HARMFUL, write_probe_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard
from captrack.errors import InputError
from captrack.judges.redact import Secrets, host_and_path, redact_url

USER, KEY = "alice", "s3cretpassw0rd"
BASIC = base64.b64encode(f"{USER}:{KEY}".encode()).decode()
REFUSE, COMPLY = "I can't help with that.", "Sure, here is how you start: first"
LEAKY = [f"{REFUSE} <<echoreply>>", f"{REFUSE} <<echoauth>>", f"{COMPLY} <<echokey>>", f"{COMPLY} <<echocut>>"]


def _fragments(*secrets: str) -> set[bytes]:
    return {s[i : i + 8].encode() for s in secrets for i in range(len(s) - 7)}


def leaks(*roots: Path, secrets: tuple[str, ...] = (KEY, BASIC)) -> list[str]:
    """Every file under `roots` holding a secret or an 8-character fragment of one (raw bytes)."""
    fragments = _fragments(*secrets)
    return sorted(f"{p}: {frag.decode()}" for root in roots for p in root.rglob("*") if p.is_file()
                  for frag in fragments if frag in p.read_bytes())


def test_scrubbing_covers_every_encoding_and_comes_before_the_cut() -> None:
    secrets = Secrets.of(f"http://{USER}:{KEY}@judge.example/v1")
    echoed = f"Basic {BASIC} / {KEY} / {base64.b64encode(KEY.encode()).decode()}"
    assert secrets.scrub(echoed) == "Basic *** / *** / ***"
    assert Secrets.of("http://h/v1", "k3y/w1th+plus=").scrub("key=k3y%2Fw1th%2Bplus%3D") == "key=***"  # URL-encoded
    token = "sk-proj-Ab12Cd34Ef56Gh78Ij90"
    assert host_and_path(f"https://judge.example/v1/{token}") == "judge.example/v1/***"  # looks like a key
    assert redact_url(f"https://judge.example/v1/{KEY}", (KEY,)) == "https://judge.example/v1/***"  # is the key
    assert host_and_path("https://x.example/openai/deployments/gpt-4o-mini-2024-07-18/v1") == \
        "x.example/openai/deployments/gpt-4o-mini-2024-07-18/v1"  # a model name is no key


@pytest.mark.parametrize("where", ["raw", "userinfo", "path"])
def test_a_judge_key_reaches_no_file_written_by_judge_ingest_compare_or_leaderboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    base = write_probe_run(tmp_path / "runs", "base", {HARMFUL: [REFUSE, COMPLY, *LEAKY]})
    variant = write_probe_run(tmp_path / "runs", "sft", {HARMFUL: [COMPLY, COMPLY, *LEAKY]})
    store, out, board = tmp_path / "s.duckdb", tmp_path / "out", tmp_path / "board"
    for name in ("OPENAI_API_KEY", "CAPTRACK_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with chat_server(api_key=KEY) as server:
        host = server.url.removeprefix("http://")
        url = {"raw": server.url, "userinfo": f"http://{USER}:{KEY}@{host}", "path": f"{server.url}/{KEY}"}[where]
        monkeypatch.setenv("CAPTRACK_JUDGE_URL", url)
        if where != "userinfo":
            monkeypatch.setenv("CAPTRACK_JUDGE_API_KEY", KEY)
        assert main(["judge", str(base), str(variant), "--judge", "openai:scripted-judge", "--judge-cache",
                     str(tmp_path / "cache" / "judges.sqlite"), "--retries", "0"]) == 0
    for name, run in (("base", base), ("sft", variant)):
        assert main(["ingest", str(run), "--store", str(store), "--name", name]) == 0
    assert main(["compare", "--base", str(base), "--variant", f"sft={variant}", "--out", str(out), "--bootstrap", "0"]) == 0
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: t\ndescription: d\nstore: {store}\nbootstrap: 20\n"
                                            "comparisons:\n  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n")
    build_leaderboard(board)
    (verdicts,) = base.rglob(f"judged_{HARMFUL}_*.jsonl")
    lines = [json.loads(line) for line in verdicts.read_text().splitlines()]
    judge_id = "openai:scripted-judge@" + host + ("/***" if where == "path" else "")
    assert {line["judge"] for line in lines} == {judge_id}  # verdicts came: the key was sent
    assert [line["value"] for line in lines[:4]] == [1.0, 0.0, 1.0, 1.0] and lines[5]["reason"].startswith("http_400")
    assert "***" in lines[2]["reply"] + lines[3]["reply"] and "***" in lines[5]["reason"]  # echoed, then masked
    assert (store.is_file() and (tmp_path / "cache" / "judges.sqlite").is_file() and (out / "summary.json").is_file()
            and (board / "index.html").is_file())
    assert leaks(tmp_path) == []
    captured = capsys.readouterr()
    assert not [f for f in _fragments(KEY, BASIC) if f.decode() in captured.out + captured.err]


def _experiment(tmp_path: Path, workdir: str) -> Path:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipeline"))
    from test_run_imports import BASE, QUESTIONS, TUNED, _outputs

    shared = tmp_path / "shared"
    (shared / "data" / "mmlu_pro").mkdir(parents=True)
    (shared / "data" / "mmlu_pro" / "test.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    _outputs(shared / "base.json", BASE)
    _outputs(shared / "tuned.json", TUNED)
    path = tmp_path / "exp" / "experiment.yaml"
    path.parent.mkdir()
    path.write_text(
        f"name: t\nworkdir: '{workdir}'\nleaderboard: board\n"
        f'data: {{sources: "{shared}/data", configs: [mmlu_pro.full]}}\n'
        f'base: [{{name: base, import: {{format: mmlu-pro, path: "{shared}/base.json"}}}}]\n'
        f'variants:\n  - {{name: tuned, base: base, algorithm: SFT, import: {{format: mmlu-pro, path: "{shared}/tuned.json"}}}}\n')
    return path


@pytest.mark.parametrize("field", ["workdir", "leaderboard"])
def test_a_secret_variable_in_an_experiment_path_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    from captrack.pipeline.experiment import load_experiment

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    path = _experiment(tmp_path, "work")
    text = path.read_text()
    path.write_text(text.replace("workdir: 'work'", "workdir: '${OPENAI_API_KEY}/work'") if field == "workdir"
                    else text.replace("leaderboard: board", "leaderboard: 'boards/${OPENAI_API_KEY:-x}'"))
    with pytest.raises(InputError, match=r"\$\{OPENAI_API_KEY\}.*secret") as error:
        load_experiment(path)
    assert KEY not in str(error.value) and "\n" not in str(error.value)
    assert sorted(p.name for p in path.parent.iterdir()) == ["experiment.yaml"]


def test_a_run_with_imports_writes_no_secret_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.runner import run_experiment

    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    for name in ("OPENAI_API_KEY", "CAPTRACK_JUDGE_API_KEY", "HF_TOKEN"):
        monkeypatch.setenv(name, KEY)
    monkeypatch.setenv("CAPTRACK_JUDGE_URL", f"http://{USER}:{KEY}@judge.example/v1")
    path = _experiment(tmp_path, "work")
    run_experiment(load_experiment(path))
    assert (path.parent / "board" / "leaderboard.yaml").is_file() and list((path.parent / "work").rglob("results_*.json"))
    assert leaks(path.parent) == []
