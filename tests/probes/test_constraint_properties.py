"""Property tests (hypothesis) for the H1/H4 constraint checks and the constraint generator."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import compose, violate

from captrack.metrics.instructions import check_constraint
from captrack.probes import generate
from captrack.probes.constraints import CONFLICTS, MAKERS

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
WORDS = st.lists(WORD, min_size=1, max_size=40)
PHRASE = st.lists(WORD, min_size=1, max_size=4).map(" ".join)

# No per-example deadline: a busy 2-core CI host can stall one example past hypothesis' 200 ms, which it reports as
# a flaky failure; these checks are about answers, not speed.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


@given(WORDS, st.integers(min_value=1, max_value=40))
def test_word_limits_count_words(words: list[str], n: int) -> None:
    text = " ".join(words)
    assert check_constraint(text, {"kind": "max_words", "n": n}) == (len(words) <= n)
    assert check_constraint(text, {"kind": "min_words", "n": n}) == (len(words) >= n)


@given(st.lists(PHRASE, min_size=1, max_size=6), st.integers(min_value=1, max_value=6))
def test_bullet_count_is_exact(items: list[str], n: int) -> None:
    text = "Intro line\n" + "\n".join(f"- {item}" for item in items)
    assert check_constraint(text, {"kind": "bullet_count", "n": n}) == (len(items) == n)


@given(PHRASE, WORDS)
def test_start_and_end_phrases(phrase: str, words: list[str]) -> None:
    body = " ".join(words)
    assert check_constraint(f"{phrase.upper()} {body}", {"kind": "start_with", "phrase": phrase})
    assert check_constraint(f"{body} {phrase}  \n", {"kind": "end_with", "phrase": phrase})
    assert not check_constraint(f"x{body} {phrase}", {"kind": "start_with", "phrase": f"y{phrase}"})
    assert not check_constraint(f"{phrase} {body}.", {"kind": "end_with", "phrase": f"{phrase}!"})


@given(st.text(min_size=1, max_size=60), st.sampled_from([",", ";", "!", "#"]))
def test_forbidden_character(text: str, char: str) -> None:
    spec = {"kind": "forbid_char", "char": char}
    assert check_constraint(text, spec) == (text.strip() != "" and char not in text)
    assert not check_constraint(text + char, spec)


@given(WORDS, st.lists(WORD, min_size=1, max_size=3, unique=True))
def test_keywords_required_and_forbidden(words: list[str], keywords: list[str]) -> None:
    text = " ".join(words)
    with_all = f"{text} {' '.join(k.upper() for k in keywords)}"
    assert check_constraint(with_all, {"kind": "include_keywords", "keywords": keywords})
    assert not check_constraint(with_all, {"kind": "forbid_words", "words": keywords})
    without = " ".join(w for w in words if not any(k in w for k in keywords)) or "zzz"
    if not any(k in "zzz" for k in keywords):
        assert not check_constraint(without, {"kind": "include_keywords", "keywords": keywords})
        assert check_constraint(without, {"kind": "forbid_words", "words": keywords})


@given(st.text(alphabet="abcXYZ 12.\n", min_size=1, max_size=40))
def test_case_checks(text: str) -> None:
    has_text = text.strip() != ""
    assert check_constraint(text.lower(), {"kind": "lowercase"}) == has_text
    assert check_constraint(text.upper(), {"kind": "uppercase"}) == has_text
    if any(c.isalpha() for c in text):
        assert not check_constraint(text.upper(), {"kind": "lowercase"})
        assert not check_constraint(text.lower(), {"kind": "uppercase"})


@given(st.dictionaries(WORD, PHRASE, min_size=1, max_size=4), st.booleans())
def test_json_object_keys(value: dict[str, str], fenced: bool) -> None:
    text = json.dumps(value)
    if fenced:
        text = f"```json\n{text}\n```"
    keys = sorted(value)
    assert check_constraint(text, {"kind": "json_object", "keys": keys})
    assert not check_constraint(text, {"kind": "json_object", "keys": [*keys, "missing_key_x"]})
    assert not check_constraint(text[:-1], {"kind": "json_object", "keys": keys})


@given(st.integers(min_value=1, max_value=5), st.integers(min_value=1, max_value=5))
def test_sections_are_counted(made: int, asked: int) -> None:
    text = "\n".join(f"SECTION {k}\nsome text" for k in range(1, made + 1))
    assert check_constraint(text, {"kind": "sections", "n": asked, "marker": "SECTION"}) == (made == asked)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_every_generated_combination_is_satisfiable_and_each_constraint_bites(seed: int) -> None:
    for item in generate("constraints", seed, 9):
        specs = json.loads(item["constraints"])
        assert len(specs) == item["level"]
        oracle = compose(specs)
        for spec in specs:
            assert not check_constraint(violate(spec, oracle), spec)


def test_conflicts_name_only_known_constraints() -> None:
    assert set().union(*CONFLICTS) <= set(MAKERS)
