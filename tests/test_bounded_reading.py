"""Every YAML and JSON file a user gives is read bounded (captrack.bounded): an alias bomb or a document nested
100,000 levels deep is refused in one line naming the file, never a hang or a RecursionError (issue 40)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fakeruns import FakeTask, write_run

from captrack.bounded import MAX_DEPTH, JSONLimitError, YAMLLimitError, load_json, load_yaml
from captrack.cli import main

FACTS = "captrack_probe_c1_facts"
# The 683-byte "billion laughs": nine levels of nine aliases each, 9^9 strings once expanded.
LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{b}: &{b} [{','.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))
DEEP_YAML = "base: " + "[" * 100_000 + "]" * 100_000 + "\n"
DEEP_JSON = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"


def _one_line(capsys: pytest.CaptureFixture[str], named: Path) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RecursionError" not in err, err
    line = err[err.index("error:"):]
    assert " ".join(str(named).split()) in " ".join(line.split()), err
    return line


def test_an_alias_bomb_and_deep_nesting_are_refused_while_plain_aliases_load() -> None:
    with pytest.raises(YAMLLimitError, match="alias"):
        load_yaml(LAUGHS)
    with pytest.raises(YAMLLimitError, match="levels deep"):
        load_yaml(DEEP_YAML)
    with pytest.raises(YAMLLimitError, match="contains it"):
        load_yaml("&a [*a]")
    assert load_yaml("a: &x {k: [1, 2]}\nb: *x\n") == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}}
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert isinstance(YAMLLimitError("x"), yaml.YAMLError)  # every caller's handler of malformed YAML applies


def test_json_nested_past_the_limit_is_a_value_error_not_a_recursion_error() -> None:
    for text in (DEEP_JSON, "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)):
        with pytest.raises(JSONLimitError):
            load_json(text)
    assert load_json(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    assert isinstance(JSONLimitError("x"), ValueError)


# What orjson (load_json's fast path) reads differently from json, or refuses: each must give json's own result or error.
JSON_EDGES = [
    b'{"doc_id": 3, "doc": {"q": "caf\xc3\xa9"}, "resps": [[["-1.5", false]]]}', b"NaN", b'{"a": Infinity}', b"-Infinity",
    b"1e400", b"123456789012345678901234567890", b"-9223372036854775809", b"18446744073709551615", b'"12345678901234567890"',
    b'"\\ud800"', b'"\xed\xa0\x80"', b"\xef\xbb\xbf{}", '{"a": 1}'.encode("utf-16"), b"\xff", b'{"a": 1, "a": 2}', b"-0",
    b"1.0000000000000002", b"{} x", b'"a\nb"', b"[1,]", b"01", b"", b"  [1]\n", '"\ud800"', "[1, 2.5]",
    b"[" * 2000 + b"]" * 2000,
]


@pytest.mark.parametrize("text", JSON_EDGES)
def test_load_json_gives_what_json_gives_value_and_error(text: str | bytes) -> None:
    """Values equal json's, types included (big integers stay exact); inputs json refuses raise its ValueError."""
    try:
        expected: object = json.loads(text)
    except RecursionError:
        with pytest.raises(JSONLimitError):
            load_json(text)
        return
    except ValueError as exc:
        with pytest.raises(type(exc)):
            load_json(text)
        return
    got = load_json(text)
    assert repr(got) == repr(expected)


BOUNDED = pytest.mark.parametrize(("text", "said"), [(LAUGHS, "alias bomb"), (DEEP_YAML, "levels deep")],
                                  ids=["billion-laughs", "deep"])


@BOUNDED
def test_captrack_run_refuses_a_bounded_experiment_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str) -> None:
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(text)
    assert main(["run", str(experiment), "--dry-run"]) == 1
    assert said in _one_line(capsys, experiment)


@BOUNDED
def test_captrack_leaderboard_refuses_a_bounded_definition_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str) -> None:
    (tmp_path / "leaderboard.yaml").write_text(text)
    assert main(["leaderboard", str(tmp_path)]) == 1
    assert said in _one_line(capsys, tmp_path / "leaderboard.yaml")


def test_compare_refuses_a_deep_extra_taxonomy_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(DEEP_YAML)
    assert main(["compare", "--scores", str(tmp_path / "s.csv"), "--out", str(tmp_path / "o"),
                 "--taxonomy", str(extra)]) == 1
    _one_line(capsys, extra)


def test_ingest_refuses_a_deep_results_file_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = write_run(tmp_path / "run", "m", [FakeTask(FACTS, {"acc": [1, 0]})])
    results.write_text(DEEP_JSON)
    assert main(["ingest", str(tmp_path / "run"), "--store", str(tmp_path / "s.duckdb")]) == 1
    _one_line(capsys, results)


def test_ingest_refuses_a_deep_trainer_state_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = write_run(tmp_path / "run", "m", [FakeTask(FACTS, {"acc": [1, 0]})])
    state = results.parent / "trainer_state.json"
    state.write_text(DEEP_JSON)
    assert main(["ingest", str(tmp_path / "run"), "--store", str(tmp_path / "s.duckdb")]) == 1
    _one_line(capsys, state)


def test_import_refuses_a_deep_jsonl_line_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "gens.jsonl"
    src.write_text(json.dumps({"id": "a", "response": "A"}) + "\n" + DEEP_JSON + "\n")
    assert main(["import", str(src), "--format", "jsonl", "--task", "captrack_mmlu_pro_full",
                 "--out", str(tmp_path / "run")]) == 1
    _one_line(capsys, src)
