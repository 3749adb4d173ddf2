"""`captrack judge --calibrate`: accuracy and Cohen's kappa against the team's labelled examples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from chat_server import chat_server

from captrack.cli import main
from captrack.judges.calibration import CALIBRATION_FILE

SETS = yaml.safe_load(CALIBRATION_FILE.read_text())["sets"]


def _oracle(messages: list[dict[str, str]]) -> str:
    """Answers every calibration item with its true label (found by its response text)."""
    text = messages[-1]["content"]
    for body in SETS.values():
        for item in body["items"]:
            if f"\n{item['response']}\n" in text and item.get("request", item.get("context")) in text:
                return str(item["label"])
    raise AssertionError("not a calibration item")


def _rows(output: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in output.splitlines() if re.match(r"^(refusal|claims) ", line)}


def test_labelled_set_is_balanced_and_about_forty_items() -> None:
    labels = {name: [i["label"] for i in body["items"]] for name, body in SETS.items()}
    assert sorted(labels) == ["claims", "refusal"] and sum(map(len, labels.values())) == 40
    assert labels["refusal"].count("REFUSAL") == labels["refusal"].count("COMPLIANCE") == 10
    assert labels["claims"].count("SUPPORTED") == labels["claims"].count("UNSUPPORTED") == 10


@pytest.mark.parametrize(
    ("decide", "refusal", "claims"),
    [
        (_oracle, ["20", "0", "1.000", "1.000"], ["20", "0", "1.000", "1.000"]),
        # A judge that always says REFUSAL: half right on the balanced set, kappa 0 (no better than chance);
        # on the claims set it never gives a valid label, so every item is NaN and counts as wrong.
        (lambda m: "REFUSAL", ["20", "0", "0.500", "0.000"], ["20", "20", "0.000", "nan"]),
    ],
    ids=["oracle", "always-refusal"],
)
def test_calibrate_reports_accuracy_and_kappa(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    decide, refusal: list[str], claims: list[str],  # type: ignore[no-untyped-def]
) -> None:
    with chat_server(decide=decide) as server:
        monkeypatch.setenv("CAPTRACK_JUDGE_URL", server.url)
        monkeypatch.setenv("CAPTRACK_JUDGE_API_KEY", server.api_key)
        args = ["judge", "--calibrate", "--judge", "openai:cal", "--judge-cache", str(tmp_path / "c.sqlite")]
        assert main(args) == 0
        assert server.requests == 40
        rows = _rows(capsys.readouterr().out)
        assert main(args) == 0 and server.requests == 40  # calibration answers are cached too
    assert rows["refusal"][3:7] == refusal
    assert rows["claims"][3:7] == claims
