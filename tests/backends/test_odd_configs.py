"""plan-memory and captrack-ds mode=auto refuse an odd config.json in one line (issue 40): a list, zero heads,
10^10 layers, null sizes, text that is no JSON; never a traceback, never an hours-long count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from known_configs import LLAMA_3_70B

from captrack.backends.auto_placement import choose_placement
from captrack.backends.memory_plan import GB
from captrack.cli import main
from captrack.errors import InputError

ODD: dict[str, Any] = {
    "a list": [LLAMA_3_70B],
    "zero heads": {**LLAMA_3_70B, "num_attention_heads": 0},
    "10^10 layers": {**LLAMA_3_70B, "num_hidden_layers": 10**10},
    "null sizes": {**LLAMA_3_70B, "hidden_size": None, "vocab_size": None},
    "text sizes": {**LLAMA_3_70B, "intermediate_size": "28672"},
    "a bool": {**LLAMA_3_70B, "num_hidden_layers": True},
}


@pytest.mark.parametrize("config", list(ODD.values()), ids=list(ODD))
def test_plan_memory_refuses_an_odd_config_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], config: Any) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["plan-memory", "--model", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and str(path) in " ".join(err.split()), err


def test_plan_memory_refuses_a_config_that_is_no_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.json"
    path.write_text("{hidden_size: 4096")
    assert main(["plan-memory", "--model", str(path)]) == 1
    assert str(path) in capsys.readouterr().err


@pytest.mark.parametrize("config", [c for c in ODD.values() if isinstance(c, dict)],
                         ids=[k for k, c in ODD.items() if isinstance(c, dict)])
def test_mode_auto_refuses_an_odd_config(config: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        choose_placement(config, [80 * GB], None)
