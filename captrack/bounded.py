"""Reading YAML and JSON that a user (or a model) wrote, bounded: no alias bomb, no nesting deep enough to blow
the stack.

A 683-byte YAML file whose aliases expand to a billion nodes ("billion laughs") or a document nested 100,000
levels deep would otherwise hang captrack or end in a RecursionError traceback. `load_yaml` and `load_json`
are drop-in replacements for ``yaml.safe_load`` and ``json.loads`` that refuse such input with an error of
the kind the caller already handles (`YAMLLimitError` is a ``yaml.YAMLError``, `JSONLimitError` a
``ValueError``), so each caller's message names its file as it does for any malformed file.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
import yaml

__all__ = ["MAX_DEPTH", "MAX_YAML_NODES", "JSONLimitError", "YAMLLimitError", "load_json", "load_yaml"]

MAX_DEPTH = 100
"""The deepest nesting of mappings and lists read (captrack's own files nest fewer than 10 levels)."""
MAX_YAML_NODES = 200_000
"""The most YAML nodes a document may hold with every alias expanded (a taxonomy holds a few thousand)."""


class YAMLLimitError(yaml.YAMLError):
    """A YAML document nested too deeply, or whose aliases expand past `MAX_YAML_NODES` nodes."""


class JSONLimitError(ValueError):
    """A JSON document nested more than `MAX_DEPTH` levels deep."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the composer's depth bounded and the alias-expanded size checked before
    anything is constructed."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:  # a value inside the deepest mapping or list allowed is one level more
                raise YAMLLimitError(f"nested more than {MAX_DEPTH} levels deep; a config file never needs that")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _check_expanded(node)
        return node


def _check_expanded(root: yaml.Node) -> None:
    """Refuse a node graph whose aliases expand past the bounds (a cycle included), without recursion."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            nests = isinstance(node, yaml.CollectionNode)
            depth[key] = nests + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_YAML_NODES:
                raise YAMLLimitError(f"its aliases expand to more than {MAX_YAML_NODES:,} values (an alias bomb?); "
                                     "write the values out")
            if depth[key] > MAX_DEPTH:
                raise YAMLLimitError(f"nested more than {MAX_DEPTH} levels deep (aliases expanded)")
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise YAMLLimitError("an alias refers to a value that contains it (a recursive structure)")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text: str | bytes) -> Any:
    """``yaml.safe_load`` bounded in depth and alias expansion.

    Raises:
        yaml.YAMLError: malformed YAML; `YAMLLimitError` for input past the bounds.
    """
    return yaml.load(text, Loader=_BoundedLoader)


def load_json(text: str | bytes) -> Any:
    """``json.loads`` bounded in depth (checked without recursion, only where enough brackets could nest that deep).

    Raises:
        ValueError: malformed JSON; `JSONLimitError` for nesting deeper than `MAX_DEPTH`.
    """
    try:
        value = _parsed(text)
    except RecursionError:
        raise JSONLimitError(f"nested more than {MAX_DEPTH} levels deep") from None
    opening = (b"[", b"{") if isinstance(text, (bytes, bytearray)) else ("[", "{")
    if text.count(opening[0]) + text.count(opening[1]) > MAX_DEPTH:  # type: ignore[arg-type]
        _check_depth(value)
    return value


_DIGITS_ONLY = bytes.maketrans(bytes(range(256)), bytes(48 if 48 <= b <= 57 else 32 for b in range(256)))
_LONG_DIGITS = re.compile(r"[0-9]{19}")


def _parsed(text: str | bytes) -> Any:
    """What ``json.loads`` gives for `text`, parsed by orjson (3x faster: a leaderboard reads the texts of hundreds of
    thousands of samples lines) wherever orjson reads it the same.

    json takes over for what orjson refuses (NaN, Infinity, a byte-order mark, UTF-16/32, lone surrogates, nesting past
    orjson's limit), so the result or the error is json's own; and for any run of 19 digits, since orjson reads an
    integer past 64 bits as a float where json keeps it exact (a number in a string falls back too: same result).
    """
    long_number = (b"0" * 19 in text.translate(_DIGITS_ONLY) if isinstance(text, (bytes, bytearray))
                   else _LONG_DIGITS.search(text) is not None)  # bytes.translate: a fifth of the regex's time
    if not long_number:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


def _check_depth(value: Any) -> None:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > MAX_DEPTH:
            raise JSONLimitError(f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item if isinstance(v, (dict, list)))
