"""HOW scorers of the official CapTrack configs: JSON-schema fidelity (H2) and function calls (H3).

``json_schema``: the first JSON object in the response (fenced, bare or in prose) must validate
against the row's ``schema`` (``format_valid``); ``exact_match`` is the answer inside it (at the
row's ``answer_path``) compared with the gold answer, as a number or an option letter.

``function_calls``: the calls are read as JSON (``[{"name": ..., "arguments": {...}}]``, one call
object, or BFCL's ``{"func": {...}}``) or as Python call syntax (``[f(a=1), g(b="x")]``). The gold is
BFCL's possible-answer form: a list of ``{function name: {parameter: [accepted values]}}``, where an
accepted ``""`` marks an optional parameter.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from typing import Any

from captrack.metrics import extract, text
from captrack.metrics.registry import scorer

__all__ = ["function_call_metrics", "parse_calls", "schema_metrics"]

Call = tuple[str, dict[str, Any]]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value.strip() else value


@scorer("json_schema", produces=("format_valid", "exact_match"))
def schema_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Whether the response's JSON validates against the schema, and whether the answer in it is right."""
    import jsonschema

    schema = _json(doc["schema"])
    try:
        value = text.find_json_value(response)
    except ValueError:
        return {"format_valid": 0.0, "exact_match": 0.0}
    valid = jsonschema.Draft202012Validator(schema).is_valid(value)
    answer = value.get(str(extract.meta_field(doc, "answer_path", "answer"))) if isinstance(value, dict) else None
    gold = str(doc["gold"])
    if answer is None or isinstance(answer, bool | dict | list):
        correct = False
    elif extract.meta_field(doc, "answer_kind", "number") == "letter":
        correct = str(answer).strip().upper() == gold.upper()
    else:
        correct = extract.number_equal(str(answer).replace(",", ""), gold)
    return {"format_valid": float(valid), "exact_match": float(correct)}


def _python_calls(body: str) -> list[Call] | None:
    try:
        tree = ast.parse(body.strip(), mode="eval").body
    except SyntaxError:
        return None
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args:
            return None
        try:
            calls.append((ast.unparse(node.func), {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}))
        except ValueError:
            return None
    return calls


def _json_call(value: Any) -> Call | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name", value.get("tool"))
    if name is None and len(value) == 1:
        name, args = next(iter(value.items()))
    else:
        args = value.get("arguments", value.get("parameters", value.get("args", {})))
    args = _json(args) if isinstance(args, str) else args
    return (name, args) if isinstance(name, str) and isinstance(args, dict) else None


def parse_calls(response: str) -> list[Call]:
    """The function calls a response makes (empty when it makes none that parse)."""
    body = text.strip_fence(response)
    try:
        value = text.find_json_value(body)
    except ValueError:
        value = None
    if value is not None:
        items = value if isinstance(value, list) else [value]
        calls = [_json_call(v) for v in items]
        if calls and all(c is not None for c in calls):
            return [c for c in calls if c is not None]
    return _python_calls(body) or []


def _same_value(value: Any, accepted: list[Any]) -> bool:
    for option in accepted:
        if option == "":
            continue
        if isinstance(option, bool) or isinstance(value, bool):
            if value is option:
                return True
        elif isinstance(option, int | float) and isinstance(value, int | float):
            if abs(float(option) - float(value)) < 1e-9:
                return True
        elif isinstance(option, str) and isinstance(value, str):
            if text.normalize(option) == text.normalize(value):
                return True
        elif option == value:
            return True
    return False


def _argument_score(args: Mapping[str, Any], spec: Mapping[str, list[Any]]) -> float:
    """Share of the gold parameters given right; a parameter the gold does not know counts as wrong."""
    checks = [_same_value(args[k], v) if k in args else "" in v for k, v in spec.items()]
    checks += [False for k in args if k not in spec]
    return sum(checks) / len(checks) if checks else 1.0


@scorer("function_calls", produces=("tool_selection", "tool_arguments"))
def function_call_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Right set of functions called (order-free), and the mean argument score over the gold calls."""
    gold = [next(iter(g.items())) for g in _json(doc["gold"])]
    calls = parse_calls(response)
    selected = sorted(name for name, _ in calls) == sorted(name for name, _ in gold)
    remaining = list(calls)
    scores = []
    for name, spec in gold:
        candidates = [c for c in remaining if c[0] == name]
        if not candidates:
            scores.append(0.0)
            continue
        best = max(candidates, key=lambda c: _argument_score(c[1], spec))
        remaining.remove(best)
        scores.append(_argument_score(best[1], spec))
    return {"tool_selection": float(selected), "tool_arguments": sum(scores) / len(scores) if scores else 0.0}
