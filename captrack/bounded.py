"""Reading YAML and JSON that a user (or a model) wrote, bounded: no alias bomb, no nesting deep enough to blow
the stack, no file read past a size limit, no repeated key applied silently.

A 683-byte YAML file whose aliases expand to a billion nodes ("billion laughs") or a document nested 100,000
levels deep would otherwise hang captrack or end in a RecursionError traceback. `load_yaml` and `load_json`
are drop-in replacements for ``yaml.safe_load`` and ``json.loads`` that refuse such input with an error of
the kind the caller already handles (`YAMLLimitError` is a ``yaml.YAMLError``, `JSONLimitError` a
``ValueError``), so each caller's message names its file as it does for any malformed file.

`read_bytes` and `read_text` read a file a user named (a policy, an experiment, a leaderboard definition) with a size
bound: a regular file past the bound is refused from its size, and anything else (a FIFO, ``/dev/zero``) is read at
most one byte past it. `FileTooLargeError` is an ``OSError``, so the callers' handlers of unreadable files apply.

A mapping that repeats a key (``{tier: critical, tier: advisory}``, or two ``rules:`` blocks) is refused by
`load_yaml` with `DuplicateKeyError`, naming the key and both lines: PyYAML would keep the last value silently.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import orjson
import yaml

__all__ = ["MAX_DATA_BYTES", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_YAML_NODES", "DuplicateKeyError", "FileTooLargeError",
           "JSONLimitError", "YAMLLimitError", "load_json", "load_yaml", "read_bytes", "read_text"]

MAX_DEPTH = 100
"""The deepest nesting of mappings and lists read (captrack's own files nest fewer than 10 levels)."""
MAX_YAML_NODES = 200_000
"""The most YAML nodes a document may hold with every alias expanded (a taxonomy holds a few thousand)."""
MAX_FILE_BYTES = 1024 * 1024
"""The largest configuration file read: 1 MiB (the taxonomy is 17 KB, an experiment of 1,000 variants about 150 KB;
PyYAML reads a few seconds per MiB)."""
MAX_DATA_BYTES = 256 * 1024 * 1024
"""The largest single data file read whole: an lm-eval results JSON, a comparison's table (lm-eval's are a few MB)."""


class YAMLLimitError(yaml.YAMLError):
    """A YAML document nested too deeply, or whose aliases expand past `MAX_YAML_NODES` nodes."""


class JSONLimitError(ValueError):
    """A JSON document nested more than `MAX_DEPTH` levels deep."""


class DuplicateKeyError(yaml.YAMLError):
    """A YAML mapping that gives one key twice (the message names the key and both lines)."""


class FileTooLargeError(OSError):
    """A file larger than the bound it is read with (an ``OSError``, EFBIG; its text is the reason, callers name the file)."""

    def __init__(self, path: str | Path, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {_size(limit)}, the most captrack reads of such a file: is it the "
                                      "right file?", str(path))

    def __str__(self) -> str:
        return str(self.strerror)


def _size(limit: int) -> str:
    return f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit:,} bytes"


def read_bytes(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`, read at most `limit` + 1 bytes deep (a FIFO or a device included).

    Raises:
        OSError: unreadable; `FileTooLargeError` past `limit` bytes.
    """
    with open(path, "rb") as handle:
        status = os.fstat(handle.fileno())
        if stat.S_ISREG(status.st_mode) and status.st_size > limit:  # refused from its size, unread
            raise FileTooLargeError(path, limit)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(path, limit)
    return data


def read_text(path: str | Path, limit: int = MAX_FILE_BYTES, encoding: str = "utf-8") -> str:
    """`read_bytes` decoded (as ``Path.read_text``: universal newlines).

    Raises:
        OSError: unreadable, or past `limit` (`FileTooLargeError`); UnicodeDecodeError: not `encoding`.
    """
    return read_bytes(path, limit).decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the composer's depth bounded, repeated keys refused (`unique_keys`) and the
    alias-expanded size checked before anything is constructed."""

    unique_keys = True

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_mapping_node(self, anchor: Any) -> Any:
        node = super().compose_mapping_node(anchor)
        if self.unique_keys:
            _check_unique_keys(self, node)
        return node

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


class _LenientLoader(_BoundedLoader):
    """The bounded loader that keeps a repeated key's last value (for model output, read like json.loads reads it)."""

    unique_keys = False


def _check_unique_keys(loader: yaml.SafeLoader, node: yaml.MappingNode) -> None:
    """Refuse a mapping whose own keys (merged ``<<`` keys aside) repeat one, naming the key and both places."""
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = _key_value(loader, key_node)
        first = seen.setdefault(key, key_node)
        if first is not key_node:
            a, b = first.start_mark, key_node.start_mark
            where = (f"line {a.line + 1}, column {a.column + 1} and column {b.column + 1}" if a.line == b.line
                     else f"lines {a.line + 1} and {b.line + 1}")
            raise DuplicateKeyError(f"key {key_node.value!r} is given twice in one mapping ({where}); "
                                    "keep one (YAML would silently apply the last)")


def _key_value(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """The key as constructed (``1`` and ``0x1`` are one int key, ``'1'`` another), or its tag and text."""
    construct = loader.yaml_constructors.get(node.tag)
    if node.tag != "tag:yaml.org,2002:str" and construct is not None:
        try:
            value = construct(loader, node)
            hash(value)
            return (node.tag, value)
        except Exception:  # a key its constructor refuses is refused when the mapping is built
            pass
    return (node.tag, node.value)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text: str | bytes, unique_keys: bool = True) -> Any:
    """``yaml.safe_load`` bounded in depth and alias expansion, refusing a mapping that repeats a key.

    Args:
        unique_keys: False keeps a repeated key's last value (model output, read as leniently as JSON is).

    Raises:
        yaml.YAMLError: malformed YAML; `YAMLLimitError` for input past the bounds; `DuplicateKeyError` for a
            repeated key.
    """
    return yaml.load(text, Loader=_BoundedLoader if unique_keys else _LenientLoader)


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
