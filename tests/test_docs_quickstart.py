"""The README and the docs' Quickstart, as a reader follows them (issue 56): the README fits on a screen, its links
lead to files that exist, each runnable experiment file is one `captrack run` accepts, and (slow) the README's
quickstart, followed literally on tiny models, produces a board."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.pipeline.experiment import load_experiment

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
QUICKSTART = ROOT / "docs" / "getting-started" / "quickstart.md"
PLACEHOLDER = re.compile(r"/path/to/(\w+)")


def runnable(page: Path) -> dict[str, str]:
    """The blocks a page marks `<!-- runnable: NAME -->`: NAME -> the fenced block after it."""
    text = page.read_text(encoding="utf-8")
    return {name: body for name, body in re.findall(r"<!-- runnable: (\S+) -->\n```\w*\n(.*?)```", text, re.S)}


def commands(block: str) -> list[list[str]]:
    """The `captrack ...` lines of a shell block, comments dropped, as argument lists."""
    return [line.split("#", 1)[0].split()[1:] for line in block.splitlines() if line.startswith("captrack ")]


def follow(page: Path, folder: Path, models: dict[str, Path]) -> Path:
    """Write the page's experiment file into `folder` with `models` in place of its /path/to/NAME folders."""
    blocks = runnable(page)
    name = next(n for n in blocks if n.endswith(".yaml"))
    text = PLACEHOLDER.sub(lambda m: str(models[m.group(1)]), blocks[name])
    (folder / name).write_text(text)
    return folder / name


def test_the_readme_fits_on_a_screen_and_its_links_exist() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert len(links) > 20
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, missing
    assert "make demo" in text and "make test" in text and "make docs" in text


@pytest.mark.parametrize("page", [README, QUICKSTART], ids=["README", "quickstart"])
def test_each_runnable_experiment_file_is_accepted(page: Path, tmp_path: Path) -> None:
    """The experiment file a page shows loads as `captrack run` loads it (schema, tasks), its commands exist."""
    models = {name: tmp_path / name for name in ("base", "sft", "dpo")}
    experiment = load_experiment(follow(page, tmp_path, models))
    assert [v.name for v in experiment.variants][:1] == ["sft"] and experiment.base.name == "base"
    lines = commands(runnable(page)["commands"])
    assert [c[0] for c in lines] == ["run", "run"] and "--dry-run" in lines[0]


@pytest.mark.slow
def test_the_readme_quickstart_followed_literally_produces_a_board(tmp_path: Path) -> None:
    """The README's experiment file with two tiny random models as base and sft, and its two commands."""
    from tinymodel import build_tiny_model

    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    models = {name: build_tiny_model(tmp_path / "models" / name, texts, seed=i) for i, name in enumerate(("base", "sft"))}
    experiment = follow(README, tmp_path, models)
    for args in commands(runnable(README)["commands"]):
        assert main([a if a != experiment.name else str(experiment) for a in args]) == 0
    board = tmp_path / "my-experiment-leaderboard"
    assert (board / "index.html").is_file() and (board / "capabilities.csv").is_file()
    assert {"sft"} <= {line.split(",")[0] for line in (board / "checkpoints.csv").read_text().splitlines()[1:]}



def test_every_runnable_block_is_one_these_tests_follow() -> None:
    """A block marked `<!-- runnable: ... -->` is a promise that a test runs it: only the pages above hold one."""
    marked = {page for page in [README, *sorted((ROOT / "docs").rglob("*.md"))] if runnable(page)}
    assert marked == {README, QUICKSTART}
    for page in marked:
        assert set(runnable(page)) == {"my-experiment.yaml", "commands"}, page
