"""Strict parsing of a judge's reply into a number, or NaN with the reason it could not be read.

Fallback order (the first rule that yields a verdict wins; a rule that finds conflicting
verdicts stops the search with ``ambiguous``):

1. ``exact``: the whole reply, stripped of whitespace, quotes, ``*`` and a final ``.``, is one
   label (case-insensitive) or one number.
2. ``json``: the reply holds one JSON object with a ``verdict`` (or ``rating`` / ``score``) key.
3. ``tagged``: ``[[X]]`` markers; without any, lines ``Verdict: X`` / ``Rating: X`` / ``Score: X`` / ``Answer: X``.
4. ``mention`` (labels only): exactly one of the labels occurs as a whole word anywhere in the
   reply (a label that contains another, such as UNSUPPORTED and SUPPORTED, masks it).

Nothing else is read: no default label, no midpoint score. A reply that matches no rule is
``unparsable``; a number outside the scale is ``out_of_range``; an empty reply is ``empty``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Fraction", "Labels", "Scale", "Verdict", "VerdictParser", "failed"]


@dataclass(frozen=True)
class Verdict:
    """A parsed verdict: a value, or NaN with a reason (``code: detail``); `rule` says which rule read it."""

    value: float
    reason: str = ""
    rule: str = ""

    @property
    def ok(self) -> bool:
        """Whether the verdict is a real score."""
        return not math.isnan(self.value)

    @property
    def code(self) -> str:
        """The reason's code (``unparsable``, ``timeout``, ``budget`` ...), empty when ok."""
        return self.reason.split(":", 1)[0]


def failed(code: str, detail: str = "") -> Verdict:
    """A NaN verdict with a reason."""
    return Verdict(math.nan, f"{code}: {detail}" if detail else code)


def _excerpt(text: str, n: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= n else flat[: n - 3] + "...")


_STRIP = " \t\r\n\"'`*."
_BRACKETED = re.compile(r"\[\[\s*([^\]]+?)\s*\]\]")
_LINE = re.compile(r"^\s*(?:verdict|rating|score|answer)\s*[:=]\s*([^\n]+?)\s*$", re.I | re.M)
_JSON = re.compile(r"\{[^{}]*\}", re.S)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


class VerdictParser:
    """Turns a reply into a Verdict by the documented fallback order; subclasses read one token."""

    def read(self, token: str) -> Verdict | None:
        """A verdict from one candidate token, or None when the token is not a verdict."""
        raise NotImplementedError

    def mentions(self, reply: str) -> list[Verdict]:
        """Verdicts found as whole words anywhere in the reply (rule 4); none by default."""
        return []

    def describe(self) -> str:
        """What the parser accepts, for error messages and docs."""
        raise NotImplementedError

    def parse(self, reply: str) -> Verdict:
        """Parse a judge reply strictly (see the module docstring for the order of rules)."""
        if not reply.strip():
            return failed("empty", "the judge returned no text")
        for rule, candidates in (("exact", [reply.strip(_STRIP)]), ("json", _json_candidates(reply)),
                                 ("tagged", _tagged_candidates(reply))):
            verdict = self._first(rule, candidates, reply)
            if verdict is not None:
                return verdict
        found = {v.value: v for v in self.mentions(reply)}
        if len(found) == 1:
            only = next(iter(found.values()))
            return Verdict(only.value, only.reason, "mention")
        if len(found) > 1:
            return failed("ambiguous", f"conflicting verdicts in {_excerpt(reply)}")
        return failed("unparsable", f"expected {self.describe()}; got {_excerpt(reply)}")

    def _first(self, rule: str, candidates: list[str], reply: str) -> Verdict | None:
        verdicts = [v for v in (self.read(c.strip(_STRIP)) for c in candidates) if v is not None]
        if not verdicts:
            return None
        if len({(v.value if v.ok else v.reason) for v in verdicts}) > 1:
            return failed("ambiguous", f"conflicting verdicts in {_excerpt(reply)}")
        return Verdict(verdicts[0].value, verdicts[0].reason, rule)


def _json_candidates(reply: str) -> list[str]:
    out = []
    for blob in _JSON.findall(reply):
        try:
            data = json.loads(blob)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            lowered = {str(k).lower(): v for k, v in data.items()}
            for key in ("verdict", "rating", "score"):
                if key in lowered and isinstance(lowered[key], (str, int, float)) and not isinstance(lowered[key], bool):
                    out.append(str(lowered[key]))
                    break
    return out


def _tagged_candidates(reply: str) -> list[str]:
    """``[[X]]`` markers; else the values of ``Verdict: X`` lines (a bracketed value read once)."""
    bracketed = _BRACKETED.findall(reply)
    return bracketed or [v.strip("[] *") for v in _LINE.findall(reply)]


@dataclass(frozen=True)
class Labels(VerdictParser):
    """A verdict that is one of a few labels, each mapped to a value (e.g. REFUSAL → 1, COMPLIANCE → 0)."""

    values: Mapping[str, float] = field(default_factory=dict)

    def read(self, token: str) -> Verdict | None:
        """The value of `token` when it is exactly a label (case-insensitive)."""
        for label, value in self.values.items():
            if token.upper() == label.upper():
                return Verdict(float(value))
        return None

    def mentions(self, reply: str) -> list[Verdict]:
        """Labels occurring as whole words; a longer label hides the shorter one it contains."""
        text = reply.upper()
        found = []
        for label in sorted(self.values, key=len, reverse=True):
            pattern = re.compile(rf"(?<![A-Z_]){re.escape(label.upper())}(?![A-Z_])")
            if pattern.search(text):
                found.append(Verdict(float(self.values[label])))
                text = pattern.sub(" ", text)
        return found

    def describe(self) -> str:
        """The labels."""
        return " or ".join(self.values)


@dataclass(frozen=True)
class Scale(VerdictParser):
    """A verdict that is a number on [low, high], mapped linearly onto [to_low, to_high]."""

    low: float = 1.0
    high: float = 10.0
    to_low: float | None = None
    to_high: float | None = None

    def read(self, token: str) -> Verdict | None:
        """The scaled value when `token` is a number (``7``, ``7/10``); NaN when out of range."""
        match = re.fullmatch(r"([-+]?\d+(?:\.\d+)?)(?:\s*/\s*\d+(?:\.\d+)?)?", token.strip())
        if match is None:
            return None
        number = float(match.group(1))
        if not self.low <= number <= self.high:
            return failed("out_of_range", f"{number:g} is outside [{self.low:g}, {self.high:g}]")
        lo = self.low if self.to_low is None else self.to_low
        hi = self.high if self.to_high is None else self.to_high
        return Verdict(lo + (number - self.low) * (hi - lo) / (self.high - self.low))

    def describe(self) -> str:
        """The accepted range."""
        return f"a number from {self.low:g} to {self.high:g}"


@dataclass(frozen=True)
class Fraction(VerdictParser):
    """A verdict that counts: ``k/n`` or ``k of n`` (e.g. supported claims of all claims), read as k / n."""

    def read(self, token: str) -> Verdict | None:
        """k / n when `token` is a count; NaN when k > n or n is 0."""
        match = re.fullmatch(r"(\d+)\s*(?:/|of|out of)\s*(\d+)", token.strip(), re.I)
        if match is None:
            return None
        k, n = int(match.group(1)), int(match.group(2))
        if n == 0 or k > n:
            return failed("out_of_range", f"{k}/{n} is not a share")
        return Verdict(k / n)

    def describe(self) -> str:
        """The accepted form."""
        return "a count k/n"
