"""The shared YAML loader refuses a mapping that repeats a key (naming the key and both lines), and every
configuration file a user names is read with a size bound, a FIFO or /dev/zero included (issue 51).

PyYAML keeps the last of a repeated key: `{capability: C2, tier: critical, tier: advisory}` made a critical rule
advisory, and two `rules:` blocks dropped the first, so a 16-point regression passed. `captrack gate /dev/zero DIR`
read until MemoryError and a 200 MB policy was still parsing after 120 s.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

import captrack.bounded as bounded
from captrack.cli import main
from captrack.errors import InputError
from captrack.gate.policy import load_policy
from captrack.pipeline.experiment import load_experiment
from captrack.report.leaderboard import load_spec

ROOT = Path(__file__).resolve().parents[1]
FLOW = "rules:\n  - {capability: C2, tier: critical, tier: advisory}\n"
BLOCKS = "version: 1\nrules:\n  - {capability: C2, tier: critical}\nmargin: 5\nrules:\n  - {capability: C1, tier: advisory}\n"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "MemoryError" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_a_repeated_key_is_refused_naming_it_and_both_lines() -> None:
    with pytest.raises(bounded.DuplicateKeyError, match=r"key 'tier' is given twice in one mapping \(line 1, column 18 and column 34\)"):
        bounded.load_yaml("{capability: C2, tier: critical, tier: advisory}")
    with pytest.raises(bounded.DuplicateKeyError, match=r"key 'rules' is given twice in one mapping \(lines 2 and 5\)"):
        bounded.load_yaml(BLOCKS)
    with pytest.raises(bounded.DuplicateKeyError, match="'0x1'"):
        bounded.load_yaml("1: a\n0x1: b\n")  # one int key, written twice
    assert bounded.load_yaml("1: a\n'1': b\n") == {1: "a", "1": "b"}  # an int and a text: two keys
    assert bounded.load_yaml("a: &x {k: 1, j: 2}\nb:\n  <<: *x\n  k: 3\n") == {"a": {"k": 1, "j": 2}, "b": {"k": 3, "j": 2}}
    assert isinstance(bounded.DuplicateKeyError("x"), yaml.YAMLError)  # every caller's handler of malformed YAML applies
    assert bounded.load_yaml("a: 1\na: 2\n", unique_keys=False) == {"a": 2}  # a model's YAML answer is read as json reads JSON


@pytest.mark.parametrize(("text", "said"), [(FLOW, "key 'tier' is given twice"), (BLOCKS, "key 'rules' is given twice")],
                         ids=["flow-mapping", "two-rules-blocks"])
def test_a_policy_repeating_a_key_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    with pytest.raises(InputError, match=said):  # on 999703f: read, the last value winning
        load_policy(policy)
    assert main(["gate", str(policy), str(tmp_path)]) == 1
    assert said in _one_line(capsys)


def test_an_experiment_repeating_a_key_is_refused(tmp_path: Path) -> None:
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text("name: e\nbase: {name: b, model: m}\nvariants:\n  - {name: v, model: m, algorithm: SFT}\n"
                          "variants:\n  - {name: w, model: m, algorithm: DPO}\n")
    with pytest.raises(InputError, match=r"key 'variants' is given twice in one mapping \(lines 3 and 5\)"):
        load_experiment(experiment)


def test_a_leaderboard_repeating_a_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "leaderboard.yaml").write_text("store: s.duckdb\ncomparisons:\n  - base: b\n    variants: [{name: v, name: w}]\n")
    with pytest.raises(InputError, match=r"key 'name' is given twice in one mapping \(line 4, column 17 and column 26\)"):
        load_spec(tmp_path)


def test_no_committed_yaml_file_repeats_a_key() -> None:
    """Every YAML file of the repository (policies, experiments, leaderboards, the taxonomy, task folders) composed by
    the loader's own composer (tags such as lm-eval's !function need no constructor there)."""
    listed = subprocess.run(["git", "ls-files", "*.yaml", "*.yml"], cwd=ROOT, capture_output=True, text=True)
    files = [ROOT / f for f in listed.stdout.split()] if listed.returncode == 0 else sorted(ROOT.glob("[!.]*/**/*.yaml"))
    assert len(files) > 50
    for path in files:
        loader = bounded._BoundedLoader(path.read_text(encoding="utf-8"))
        try:
            while loader.check_node():
                loader.get_node()
        finally:
            loader.dispose()


# -- size bounds ----------------------------------------------------------------------------------------------------

def test_the_gate_refuses_dev_zero_as_a_policy_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", "/dev/zero", str(tmp_path)]) == 1  # on 999703f: read until MemoryError
    err = _one_line(capsys)
    assert "/dev/zero" in err and "larger than 1 MiB" in err


def test_a_large_policy_is_refused_from_its_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.yaml"
    with policy.open("wb") as handle:  # 200 MB, sparse: refused from its size, never read
        handle.truncate(200 * 1024 * 1024)
    assert main(["gate", str(policy), str(tmp_path)]) == 1
    assert "larger than 1 MiB" in _one_line(capsys)
    comment = tmp_path / "comment.yaml"
    comment.write_text("# " + "x" * bounded.MAX_FILE_BYTES + "\nrules: [{capability: C1, tier: critical}]\n")
    with pytest.raises(InputError, match="larger than 1 MiB"):  # on 999703f: read whole, then parsed
        load_policy(comment)


def test_a_fifo_is_read_at_most_one_byte_past_the_bound(tmp_path: Path) -> None:
    fifo = tmp_path / "policy.yaml"
    os.mkfifo(fifo)
    sent: list[int] = []

    def write() -> None:
        with open(fifo, "wb") as handle:
            try:
                for _ in range(64):
                    sent.append(handle.write(b"#" * 65536))  # 4 MiB offered in all
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with pytest.raises(bounded.FileTooLargeError, match="larger than 1 MiB"):
        bounded.read_bytes(fifo)
    writer.join(timeout=30)
    assert sum(sent) < 4 * 1024 * 1024  # the reader stopped; the writer saw the pipe close


@pytest.mark.parametrize("command", ["run", "leaderboard"])
def test_experiment_and_leaderboard_files_are_read_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           command: str) -> None:
    target = tmp_path / ("experiment.yaml" if command == "run" else "leaderboard.yaml")
    target.symlink_to("/dev/zero")
    args = [command, str(target), "--dry-run"] if command == "run" else [command, str(tmp_path)]
    assert main(args) == 1
    assert "larger than 1 MiB" in _one_line(capsys)
