"""Judge prompts: team-written files under captrack/judges/prompts/, one per judged metric family, versioned.

A prompt file is YAML with ``name``, ``version`` (bump it whenever the text changes), ``description``,
``fields`` (the placeholders it fills, written ``{field}`` in the text), ``system`` and ``user``.
Only declared fields are substituted; other braces are left alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from captrack.bounded import load_yaml
from captrack.errors import InputError, UnknownNameError
from captrack.judges.base import Message

__all__ = ["PROMPTS_DIR", "Prompt", "load_prompt"]

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
_FIELD = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Prompt:
    """A loaded judge prompt."""

    name: str
    version: int
    description: str
    fields: tuple[str, ...]
    system: str
    user: str

    @property
    def ref(self) -> str:
        """``name@version``, recorded in judged rows and in the cache key."""
        return f"{self.name}@{self.version}"

    def render(self, values: Mapping[str, str]) -> list[Message]:
        """The chat messages with every field filled in.

        Raises:
            InputError: a field is missing from `values`.
        """
        missing = [f for f in self.fields if f not in values]
        if missing:
            raise InputError(f"judge prompt {self.ref}: no value for field(s) {missing}")

        def fill(text: str) -> str:
            return _FIELD.sub(lambda m: str(values[m.group(1)]) if m.group(1) in self.fields else m.group(0), text)

        messages = [{"role": "system", "content": fill(self.system).strip()}] if self.system.strip() else []
        return [*messages, {"role": "user", "content": fill(self.user).strip()}]


@functools.cache
def load_prompt(name: str) -> Prompt:
    """Load ``prompts/<name>.yaml``.

    Raises:
        UnknownNameError: no such prompt (close matches listed); InputError: a malformed file.
    """
    path = PROMPTS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise UnknownNameError("judge prompt", name, [p.stem for p in PROMPTS_DIR.glob("*.yaml")])
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict) or not {"name", "version", "fields", "user"} <= set(raw):
        raise InputError(f"{path}: a judge prompt needs name, version, fields and user")
    if raw["name"] != name:
        raise InputError(f"{path}: file is named {name!r} but says name: {raw['name']!r}")
    fields = tuple(str(f) for f in raw["fields"])
    used = set(_FIELD.findall(str(raw.get("system", "")) + str(raw["user"])))
    if not set(fields) <= used:
        raise InputError(f"{path}: field(s) {sorted(set(fields) - used)} are declared but never used in the text")
    return Prompt(name, int(raw["version"]), str(raw.get("description", "")), fields,
                  str(raw.get("system", "")), str(raw["user"]))
