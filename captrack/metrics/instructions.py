"""H1 instruction following: verifiable constraints, each a pure check on the response.

A doc carries ``constraints``: a list (or its JSON text) of ``{"kind": <name>, ...params}``. The scorer reports
whether all were followed (``pass_all``) and the share followed (``pass_fraction``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from captrack.errors import InputError
from captrack.metrics import text
from captrack.metrics.registry import scorer
from captrack.registries import Registry

__all__ = ["CONSTRAINTS", "check_constraint", "constraint", "instruction_metrics"]

Check = Callable[[str, Mapping[str, Any]], bool]
CONSTRAINTS: Registry[Check] = Registry("constraint")
"""Every verifiable constraint check, by the ``kind`` a doc names (all registered in this module)."""


def constraint(kind: str) -> Callable[[Check], Check]:
    """Register a verifiable constraint check ``(response, params) -> followed?``."""
    return CONSTRAINTS.register(kind)


def check_constraint(response: str, spec: Mapping[str, Any]) -> bool:
    """Check one constraint spec (``{"kind": ..., params}``) against a response."""
    return CONSTRAINTS.get(str(spec.get("kind", "")))(response, spec)


@constraint("lowercase")
def _lowercase(response: str, params: Mapping[str, Any]) -> bool:
    return response.strip() != "" and response == response.lower()


@constraint("uppercase")
def _uppercase(response: str, params: Mapping[str, Any]) -> bool:
    return response.strip() != "" and response == response.upper()


@constraint("include_keywords")
def _include_keywords(response: str, params: Mapping[str, Any]) -> bool:
    lowered = response.lower()
    return all(str(k).lower() in lowered for k in params["keywords"])


@constraint("forbid_words")
def _forbid_words(response: str, params: Mapping[str, Any]) -> bool:
    present = {w.lower() for w in text.words(response)}
    return bool(present) and not any(str(w).lower() in present for w in params["words"])


@constraint("max_words")
def _max_words(response: str, params: Mapping[str, Any]) -> bool:
    return 0 < len(text.words(response)) <= int(params["n"])


@constraint("min_words")
def _min_words(response: str, params: Mapping[str, Any]) -> bool:
    return len(text.words(response)) >= int(params["n"])


@constraint("start_with")
def _start_with(response: str, params: Mapping[str, Any]) -> bool:
    return response.strip().lower().startswith(str(params["phrase"]).lower())


@constraint("end_with")
def _end_with(response: str, params: Mapping[str, Any]) -> bool:
    return response.strip().lower().endswith(str(params["phrase"]).lower())


@constraint("bullet_count")
def _bullet_count(response: str, params: Mapping[str, Any]) -> bool:
    return len(text.bullet_lines(response)) == int(params["n"])


@constraint("forbid_char")
def _forbid_char(response: str, params: Mapping[str, Any]) -> bool:
    return response.strip() != "" and str(params["char"]) not in response


@constraint("json_object")
def _json_object(response: str, params: Mapping[str, Any]) -> bool:
    try:
        value = text.parse_json_block(response)
    except ValueError:
        return False
    return isinstance(value, dict) and all(k in value for k in params.get("keys") or [])


@constraint("sections")
def _sections(response: str, params: Mapping[str, Any]) -> bool:
    marker = str(params.get("marker", "SECTION"))
    starts = [line for line in response.splitlines() if line.strip().startswith(marker)]
    return len(starts) == int(params["n"])


@scorer("instructions", produces=("pass_all", "pass_fraction"))
def instruction_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Whether every constraint in ``doc["constraints"]`` holds, and the share that holds."""
    specs = doc.get("constraints") or []
    if isinstance(specs, str):
        specs = json.loads(specs)
    if not specs:
        raise InputError(f"doc {doc.get('id', '?')!r} has no 'constraints' to check")
    followed = [check_constraint(response, spec) for spec in specs]
    return {
        "pass_all": float(all(followed)),
        "pass_fraction": sum(followed) / len(followed),
    }
