"""`captrack import --format inspect` against hostile and unfinished logs, through both readers.

Each test runs with inspect_ai's own reader (the default where it is installed) and with captrack's bounded
reader (``CAPTRACK_INSPECT_READER=captrack``, what runs where inspect_ai is absent). Logs are written by
inspect_ai's ``write_eval_log``; bombs are built by tests/benchmarks/bench_import_bomb.py (Zstandard
run-length blocks: a few KiB that expand to hundreds of MB).
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from captrack.cli import main
from captrack.errors import InputError
from captrack.imports import import_run

pytest.importorskip("inspect_ai.log", reason="inspect_ai (the dev extra) writes the logs")
ROOT = Path(__file__).resolve().parents[2]
READERS = ["inspect", "captrack"]
MEMBER = "samples/1_epoch_1.json"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_bench_import_bomb", ROOT / "tests" / "benchmarks" / "bench_import_bomb.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


@pytest.fixture(params=READERS)
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CAPTRACK_INSPECT_READER", request.param)
    return str(request.param)


def _write(path: Path, status: str = "success", present: int = 10, planned: int = 10,
           values: list[Any] | None = None) -> Path:
    """An Inspect log of `planned` samples written by inspect_ai, `present` of them in the log."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    values = values or ["C" if i % 3 else "I" for i in range(present)]
    spec = EvalSpec(created="2026-11-27T19:00:00+00:00", task="arith", model="mockllm/m", config=EvalConfig(),
                    dataset=EvalDataset(name="arith", samples=planned, sample_ids=[f"q{i}" for i in range(planned)]))
    samples = [EvalSample(id=f"q{i}", epoch=1, input=f"What is {i}+1?", target=str(i + 1),
                          output=ModelOutput.from_content("mockllm/m", str(i + 1)), scores={"match": Score(value=value)})
               for i, value in enumerate(values)]
    write_eval_log(EvalLog(eval=spec, samples=samples, status=status), str(path))  # type: ignore[arg-type]
    return path


def _rezip(src: Path, dst: Path, method: int = zipfile.ZIP_STORED, extra: tuple[tuple[str, bytes], ...] = ()) -> Path:
    """The members of `src` (read by zipfile as inspect_ai patches it for Zstandard) in a zip of `method`, then `extra`."""
    import inspect_ai.log  # noqa: F401  # teaches zipfile Zstandard on Python < 3.14

    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w", compression=method) as new:
        for info in old.infolist():
            new.writestr(info.filename, old.read(info))
        for name, data in extra:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: here it is the point
                new.writestr(name, data)
    return dst


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["import", *args, "--format", "inspect"])
    out, err = capsys.readouterr()
    return code, out, err


def _refused(capsys: pytest.CaptureFixture[str], log: Path, out: Path, *needles: str) -> str:
    code, _, err = _cli(capsys, str(log), "--out", str(out))
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(needle in lines[0] for needle in needles), lines[0]
    assert "Traceback" not in err and not out.exists()
    return lines[0]


def test_a_zstandard_bomb_is_refused_in_one_line_naming_the_file_and_member(
        reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    big = 200 * 10**6
    lying = BENCH.write_eval_bomb(tmp_path / "lying.eval", {MEMBER: (BENCH.zstd_rle(big), 1000)})
    assert lying.stat().st_size < 10_000
    _refused(capsys, lying, tmp_path / "o1", f"{lying}:{MEMBER}: decompresses to more than the 1,000 bytes")
    monkeypatch.setenv("CAPTRACK_IMPORT_MAX_MB", "1")
    honest = BENCH.write_eval_bomb(tmp_path / "honest.eval", {MEMBER: (BENCH.zstd_rle(big), big)})
    _refused(capsys, honest, tmp_path / "o2", f"{honest}:{MEMBER}: larger than the import limit of 1 MiB")
    many = BENCH.write_eval_bomb(tmp_path / "many.eval", {f"samples/{i}_epoch_1.json": (BENCH.zstd_rle(big), 600_000)
                                                          for i in range(2)})
    _refused(capsys, many, tmp_path / "o3", f"{many} (its ", "members together, uncompressed): larger than the import")


def test_a_deflate_member_longer_than_it_declares_is_refused_naming_the_file_and_member(
        reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "samples/q99_epoch_1.json"
    log = _rezip(_write(tmp_path / "ok.eval"), tmp_path / "deflated.eval", zipfile.ZIP_DEFLATED,
                 extra=((name, b" " * 20_000_000),))
    raw = bytearray(log.read_bytes())
    struct.pack_into("<I", raw, BENCH.find_header(raw, BENCH.CENTRAL, name.encode()) + 24, 1000)  # declares 1,000 bytes
    log.write_bytes(bytes(raw))
    _refused(capsys, log, tmp_path / "out", f"{log}:{name}: ", "CRC")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory from Linux's /proc (VmHWM)")
@pytest.mark.parametrize(("declared", "choice"), [(1000, "auto"), (150 * 10**6, "auto"), (150 * 10**6, "captrack")])
def test_a_zstandard_bomb_is_refused_with_bounded_memory(declared: int, choice: str, tmp_path: Path) -> None:
    """A 256 MB bomb in a child process: its peak memory (VmHWM, which starts afresh at exec unlike ru_maxrss) stays
    near the CLI's own, whether the member declares 1,000 bytes or 150 MB (under the limit: refused as it passes
    them, no byte kept; the old reader held 460 MiB)."""
    bomb = BENCH.write_eval_bomb(tmp_path / "bomb.eval", {MEMBER: (BENCH.zstd_rle(256 * 10**6, window_log=20), declared)})
    child = ("import re\nfrom pathlib import Path\nfrom captrack.cli import main\n"
             f"code = main(['import', {str(bomb)!r}, '--format', 'inspect', '--out', {str(tmp_path / 'out')!r}])\n"
             "print(code, re.search(r'VmHWM:\\s*(\\d+)', Path('/proc/self/status').read_text()).group(1))")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=False,
                          env={**os.environ, "CAPTRACK_INSPECT_READER": choice}, cwd=ROOT)
    code, peak_kb = map(int, done.stdout.split())
    assert code == 1 and len(done.stderr.strip().splitlines()) == 1 and MEMBER in done.stderr, done.stderr
    assert peak_kb < 200 * 1024, f"peak RSS {peak_kb / 1024:.0f} MiB"


def test_the_log_is_read_by_inspects_own_reader_where_installed_and_both_readers_agree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect_ai

    log = _write(tmp_path / "m.eval")
    got = {}
    for choice in READERS:
        monkeypatch.setenv("CAPTRACK_INSPECT_READER", choice)
        result = import_run(log, "inspect", tmp_path / choice)
        samples = next((tmp_path / choice).rglob("samples_*.jsonl")).read_text().splitlines()
        got[choice] = sorted((row["doc"]["id"], row["outcome"]) for row in map(json.loads, samples))
        reader = f"inspect_ai {inspect_ai.__version__}'s reader" if choice == "inspect" else "captrack's bounded reader"
        assert f"m.eval: read by {reader}" in result.provenance["outcomes"]
    assert got["inspect"] == got["captrack"] and len(got["inspect"]) == 10
    monkeypatch.setenv("CAPTRACK_INSPECT_READER", "nosuch")
    with pytest.raises(InputError, match=r"CAPTRACK_INSPECT_READER='nosuch': give auto, inspect .* or captrack"):
        import_run(log, "inspect", tmp_path / "bad")


@pytest.mark.parametrize("status", ["error", "cancelled"])
def test_an_unfinished_log_is_refused_unless_allow_partial_which_says_how_many_are_missing(
        status: str, reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write(tmp_path / "cut.eval", status=status, present=6, planned=10)
    line = _refused(capsys, log, tmp_path / "refused", f"{log}: Inspect marks this log {status!r}",
                    "4 of its 10 samples missing", "--allow-partial")
    assert "nothing was written" in line
    code, out, err = _cli(capsys, str(log), "--out", str(tmp_path / "partial"), "--allow-partial")
    assert code == 0, err
    assert "arith: 6 items" in out and f"log status {status!r}: 4 of its 10 samples missing" in out
    samples = next((tmp_path / "partial").rglob("samples_*.jsonl")).read_text().splitlines()
    assert len(samples) == 6


@pytest.mark.parametrize("value", ["7", "inf", "nan", "-0.5", "1e400", "Infinity", "0x1", "1_0"])
def test_a_score_given_as_text_is_parsed_strictly(value: str, reader: str, tmp_path: Path) -> None:
    log = _write(tmp_path / "s.eval", present=3, planned=3, values=["C", value, "I"])
    with pytest.raises(InputError, match=r"s\.eval:samples/q1_epoch_1\.json: scores\.match: .*(outside \[0, 1\]|not one captrack reads)"):
        import_run(log, "inspect", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_text_scores_inspect_reads_as_numbers_still_import(reader: str, tmp_path: Path) -> None:
    log = _write(tmp_path / "s.eval", present=7, planned=7, values=["C", "I", "P", "N", " 0.25 ", "yes", "1"])
    import_run(log, "inspect", tmp_path / "out")
    rows = next((tmp_path / "out").rglob("samples_*.jsonl")).read_text().splitlines()
    assert {row["doc"]["id"]: row["outcome"] for row in map(json.loads, rows)} == {
        "q0": 1.0, "q1": 0.0, "q2": 0.5, "q3": 0.0, "q4": 0.25, "q5": 1.0, "q6": 1.0}


def test_a_member_held_twice_is_refused_unless_it_is_a_sample_inspect_wrote_again(
        reader: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import inspect_ai.log  # noqa: F401  # zipfile reads Zstandard

    log = _write(tmp_path / "m.eval")
    with zipfile.ZipFile(log) as archive:
        header = json.loads(archive.read("header.json"))
        sample = json.loads(archive.read("samples/q1_epoch_1.json"))
    header["eval"]["model"] = "mockllm/other"
    two_headers = _rezip(log, tmp_path / "two-headers.eval", extra=(("header.json", json.dumps(header).encode()),))
    _refused(capsys, two_headers, tmp_path / "o1", f"{two_headers}: holds two members named 'header.json'")
    sample["scores"]["match"]["value"] = "I" if sample["scores"]["match"]["value"] == "C" else "C"
    relogged = _rezip(log, tmp_path / "relogged.eval",
                      extra=(("samples/q1_epoch_1.json", json.dumps(sample).encode()),))
    result = import_run(relogged, "inspect", tmp_path / "o2")
    rows = next((tmp_path / "o2").rglob("samples_*.jsonl")).read_text().splitlines()
    outcome = {row["doc"]["id"]: row["outcome"] for row in map(json.loads, rows)}["q1"]
    assert outcome == (1.0 if sample["scores"]["match"]["value"] == "C" else 0.0)  # the last copy, as Inspect reads it
    assert "1 sample record(s) written again by Inspect" in result.provenance["outcomes"]


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED, 93])
def test_a_member_with_a_bad_crc_is_named_with_its_file(method: int, reader: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    log = _write(tmp_path / "m.eval")
    if method != 93:
        log = _rezip(log, tmp_path / "re.eval", method)
    raw = bytearray(log.read_bytes())
    at = BENCH.find_header(raw, BENCH.CENTRAL, b"samples/q3_epoch_1.json")
    struct.pack_into("<I", raw, at + 16, struct.unpack_from("<I", raw, at + 16)[0] ^ 0xFFFF)
    log.write_bytes(bytes(raw))
    _refused(capsys, log, tmp_path / "out", f"{log}:samples/q3_epoch_1.json: ", "CRC")
