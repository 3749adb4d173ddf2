"""Reading import sources safely: bounded reads, one hash of the bytes parsed, and strict field types.

Every source file is read once into memory, at most :data:`MAX_SOURCE_BYTES` bytes (a zip member
too, counted as it is decompressed, so a small zip of a huge member is refused after reading the
limit, not after filling memory); the SHA-256 recorded as the import's provenance is of exactly
those bytes. Rows are then parsed from them: JSON Lines, CSV or Parquet, with errors naming the file
and line.

Fields:
- a response is a string, or a list holding exactly one string (CapTrack's ``outputs`` of a single
  sample); numbers, booleans, objects and longer lists are refused, never scored as their ``repr``;
- an ``id`` is a string or an integer (the task's own id, compared as text); a ``doc_id`` is a
  non-negative integer (an integral float such as ``3.0`` from a Parquet column is accepted, ``0.9``
  and booleans are refused).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from captrack.bounded import load_json
from captrack.errors import InputError

__all__ = ["MAX_SOURCE_BYTES", "SourceBytes", "doc_index", "max_source_bytes", "read_bytes", "read_zip_member",
           "response_text", "table_rows", "text_id", "too_big"]

MAX_SOURCE_BYTES = 512 << 20
"""The largest source file (or uncompressed zip member) `captrack import` reads: 512 MiB, about 20 times
MMLU-Pro's largest published outputs file. Raise it with CAPTRACK_IMPORT_MAX_MB."""
_ENV = "CAPTRACK_IMPORT_MAX_MB"
_CHUNK = 1 << 20


def max_source_bytes() -> int:
    """The read limit: $CAPTRACK_IMPORT_MAX_MB mebibytes when set, else MAX_SOURCE_BYTES."""
    value = os.environ.get(_ENV, "").strip()
    if value:
        try:
            return max(1, int(float(value) * (1 << 20)))
        except ValueError as exc:
            raise InputError(f"{_ENV}={value!r} is not a number of MiB") from exc
    return MAX_SOURCE_BYTES


@dataclass(frozen=True)
class SourceBytes:
    """The bytes of one source file as read, and their SHA-256."""

    where: str
    data: bytes
    sha256: str


def too_big(where: str, limit: int) -> InputError:
    """The one-line refusal of what is over the import limit, naming where and how to raise it."""
    return InputError(f"{where}: larger than the import limit of {limit >> 20} MiB; split the file, or raise the "
                      f"limit with {_ENV}=<MiB> if this machine has the memory")


def _read_limited(handle: IO[bytes], where: str, limit: int) -> SourceBytes:
    digest, parts, size = hashlib.sha256(), [], 0
    while True:
        block = handle.read(_CHUNK)
        if not block:
            break
        size += len(block)
        if size > limit:
            raise too_big(where, limit)
        digest.update(block)
        parts.append(block)
    return SourceBytes(where, b"".join(parts), digest.hexdigest())


def read_bytes(path: Path) -> SourceBytes:
    """A source file's bytes (at most the limit) and their SHA-256.

    Raises:
        InputError: the file is larger than the limit, or cannot be read (the path named).
    """
    limit = max_source_bytes()
    try:
        if path.stat().st_size > limit:
            raise too_big(str(path), limit)
        with path.open("rb") as handle:
            return _read_limited(handle, str(path), limit)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc


def read_zip_member(path: Path, suffix: str) -> tuple[SourceBytes, str]:
    """The one member of zip `path` ending in `suffix`, read with the limit counted as it decompresses.

    Returns:
        The member's bytes (their SHA-256 is of the zip file itself: what was given) and its name.

    Raises:
        InputError: not a zip, not exactly one such member, or the member is over the limit.
    """
    limit = max_source_bytes()
    zipped = read_bytes(path)
    try:
        with zipfile.ZipFile(io.BytesIO(zipped.data)) as archive:
            members = [m for m in archive.infolist() if m.filename.endswith(suffix) and not m.is_dir()]
            if len(members) != 1:
                raise InputError(f"{path}: expected one {suffix} file inside, found {[m.filename for m in members] or 'none'}")
            member = members[0]
            where = f"{path}:{member.filename}"
            if member.file_size > limit:
                raise too_big(where, limit)
            with archive.open(member) as handle:
                data = _read_limited(handle, where, limit)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise InputError(f"{path}: not a readable zip archive ({exc}); check the download") from exc
    return SourceBytes(where, data.data, zipped.sha256), member.filename


def decode(source: SourceBytes) -> str:
    """The bytes as UTF-8 text (a BOM dropped).

    Raises:
        InputError: not UTF-8 (file, line and byte offset named).
    """
    try:
        return source.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = source.data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{source.where}:{line}: not UTF-8 text (byte {exc.start}: {exc.reason}); save the file as UTF-8") from exc


def _json_lines(source: SourceBytes) -> Iterator[tuple[str, dict[str, Any]]]:
    for line_no, raw in enumerate(source.data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = load_json(raw.decode("utf-8-sig" if line_no == 1 else "utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(f"{source.where}:{line_no}: not UTF-8 text ({exc.reason}); save the file as UTF-8") from exc
        except ValueError as exc:  # not JSON, or nested past captrack.bounded's limit
            raise InputError(f"{source.where}:{line_no}: not JSON ({exc})") from exc
        if not isinstance(row, dict):
            raise InputError(f"{source.where}:{line_no}: expected a JSON object, got {type(row).__name__}")
        yield f"{source.where}:{line_no}", row


def _csv_rows(source: SourceBytes) -> Iterator[tuple[str, dict[str, Any]]]:
    reader = csv.DictReader(io.StringIO(decode(source), newline=""))
    before = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 1 << 62))  # a long response is one big cell; the file size is capped already
    try:
        line_no = 1
        for row in reader:
            line_no = reader.line_num
            if None in row:
                raise InputError(f"{source.where}:{line_no}: more cells than the header has columns")
            yield f"{source.where}:{line_no}", dict(row)
    except csv.Error as exc:
        raise InputError(f"{source.where}:{reader.line_num}: malformed CSV ({exc})") from exc
    finally:
        csv.field_size_limit(before)


def _parquet_rows(source: SourceBytes) -> Iterator[tuple[str, dict[str, Any]]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(pa.BufferReader(source.data)).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{source.where}: not a readable Parquet file ({' '.join(str(exc).split())})") from exc
    for i, row in enumerate(rows):
        yield f"{source.where} row {i}", row


def table_rows(source: SourceBytes, suffix: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, row) of JSON Lines, CSV or Parquet bytes; where = ``file:line`` (or ``file row i``)."""
    if suffix == ".jsonl":
        return _json_lines(source)
    if suffix == ".parquet":
        return _parquet_rows(source)
    return _csv_rows(source)


def response_text(where: str, key: str, value: Any) -> str:
    """A response as text: a string, or a list of exactly one string.

    Raises:
        InputError: null, a number, boolean, object, or a list of other than one string.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if value is None:
        raise InputError(f"{where}: {key!r} is null; every document needs its generated text")
    shown = json.dumps(value, default=str)[:80]
    raise InputError(f"{where}: {key!r} is {type(value).__name__} {shown}; a response must be a string (or a list "
                     "holding exactly one string)")


def text_id(where: str, value: Any) -> str:
    """A document's own id as text: a string, or an integer.

    Raises:
        InputError: a boolean, fractional number, object or list.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InputError(f"{where}: 'id' {value!r} ({type(value).__name__}) is not a document id; give the task's id as a "
                     "string or integer")


def doc_index(where: str, value: Any) -> int:
    """lm-eval's document index: a non-negative integer (an integral float or digit string accepted).

    Raises:
        InputError: a boolean, a fraction, a negative number or other text.
    """
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or number < 0:
        raise InputError(f"{where}: doc_id {value!r} is not a non-negative integer (lm-eval's index of the document)")
    return number
