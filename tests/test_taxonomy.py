"""The taxonomy file: structure, validation errors, tags derived from it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from captrack.errors import InputError, UnknownNameError
from captrack.metrics import get_metric
from captrack.paths import taxonomy_path
from captrack.taxonomy import CAPABILITY_KEYS, load_taxonomy


def test_all_groups_and_17_capabilities() -> None:
    taxonomy = load_taxonomy()
    assert [g.key for g in taxonomy.groups] == ["CAN", "WILL", "HOW"]
    assert [c.key for c in taxonomy.capabilities] == list(CAPABILITY_KEYS) and len(CAPABILITY_KEYS) == 17
    assert taxonomy.capability("c5a").name == "Prompt-form invariance"
    for cap in taxonomy.capabilities:
        assert cap.members, cap.key
        for member in cap.members:
            assert member.direction == get_metric(member.metric).direction


def test_unknown_task_and_metric_name_the_closest_match() -> None:
    taxonomy = load_taxonomy()
    with pytest.raises(UnknownNameError, match="did you mean 'captrack_probe_c1_facts'"):
        taxonomy.members_of("captrack_probe_c1_fact")
    with pytest.raises(UnknownNameError, match="did you mean 'acc'"):
        taxonomy.members_of("captrack_probe_c1_facts", "accc")


def _mutated(tmp_path: Path, edit: object) -> Path:
    raw = yaml.safe_load(taxonomy_path().read_text())
    edit(raw)  # type: ignore[operator]
    path = tmp_path / "taxonomy.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_unknown_metric_in_the_file_is_an_error(tmp_path: Path) -> None:
    def edit(raw: dict) -> None:
        raw["groups"]["CAN"]["capabilities"]["C1"]["members"][0]["metric"] = "acuracy"

    with pytest.raises(UnknownNameError, match=r"unknown metric 'acuracy'; did you mean .*'acc'"):
        load_taxonomy(_mutated(tmp_path, edit))


def test_direction_must_agree_with_the_metric(tmp_path: Path) -> None:
    def edit(raw: dict) -> None:
        raw["groups"]["WILL"]["capabilities"]["W3a"]["members"][0]["direction"] = "higher"

    with pytest.raises(InputError, match="declared 'neutral'"):
        load_taxonomy(_mutated(tmp_path, edit))


def test_missing_capability_is_named(tmp_path: Path) -> None:
    def edit(raw: dict) -> None:
        del raw["groups"]["HOW"]["capabilities"]["H6"]

    with pytest.raises(InputError, match=r"missing \['H6'\]"):
        load_taxonomy(_mutated(tmp_path, edit))


def test_adding_a_member_needs_no_structural_change(tmp_path: Path) -> None:
    def edit(raw: dict) -> None:
        raw["groups"]["CAN"]["capabilities"]["C2"]["members"].append(
            {"task": "captrack_probe_c2_puzzles", "metric": "exact_match", "direction": "higher"}
        )

    taxonomy = load_taxonomy(_mutated(tmp_path, edit))
    assert taxonomy.tags_for("captrack_probe_c2_puzzles") == ["captrack", "captrack-probes", "captrack-can", "captrack-c2"]
