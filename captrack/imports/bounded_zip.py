"""ZIP archives given to `captrack import`, read with a bound whatever their headers claim.

Every member is decompressed in chunks of at most 1 MiB (stored, deflate and the other methods through
``zipfile``; Zstandard, method 93, with ``zstandard`` here, since Python reads it only from 3.14 on), and
reading stops as soon as a member yields more than the size the archive declares for it: a small archive
whose member expands to gigabytes is refused after reading its declared size, never after filling memory.
The declared sizes of the members read together must fit the import limit
(:func:`captrack.imports.reading.max_source_bytes`). A member's size and CRC-32 are checked as it ends.
Every refusal is one line naming the archive and the member.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from captrack.errors import InputError
from captrack.imports.reading import SourceBytes, max_source_bytes, too_big

__all__ = ["ZSTD", "BoundedZip"]

ZSTD = 93
"""The ZIP method number of Zstandard (APPNOTE 6.3.7), what recent Inspect versions write."""
_CHUNK = 1 << 20
_WINDOW = 1 << 27  # zstd's own default ceiling on a frame's window (128 MiB): the most one decoder holds
_LOCAL = struct.Struct("<4s22xHH")  # signature, (version .. sizes), name length, extra length


class BoundedZip:
    """One ZIP archive held in memory (the bytes already read within the limit), its members read with a bound."""

    def __init__(self, source: SourceBytes, path: Path, what: str) -> None:
        self.path, self.data, self.limit = path, source.data, max_source_bytes()
        try:
            self.archive = zipfile.ZipFile(io.BytesIO(source.data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
            raise InputError(f"{path}: not {what} (a ZIP archive): {exc}; the file is truncated or damaged") from exc
        self.infos = [info for info in self.archive.infolist() if not info.is_dir()]

    def repeated(self) -> list[str]:
        """Member names the archive holds more than once (a reader by name sees only the last)."""
        return [name for name, count in Counter(i.filename for i in self.infos).items() if count > 1]

    def refuse_repeated(self, names: Iterable[str] | None = None) -> None:
        """Refuse an archive holding two members of one name (among `names`, when given).

        Raises:
            InputError: naming the archive and the member.
        """
        wanted = None if names is None else set(names)
        for name in self.repeated():
            if wanted is None or name in wanted:
                raise InputError(f"{self.path}: holds two members named {name!r}, and a reader would take one and "
                                 "silently ignore the other; keep one (nothing was written)")

    def latest(self) -> dict[str, zipfile.ZipInfo]:
        """Each name's last member (the one a reader by name returns)."""
        return {info.filename: info for info in self.infos}

    def check_sizes(self, infos: Iterable[zipfile.ZipInfo]) -> None:
        """Refuse, before decompressing anything, members whose declared sizes together exceed the limit.

        Raises:
            InputError: the largest member named.
        """
        infos = list(infos)
        if infos and sum(i.file_size for i in infos) > self.limit:
            largest = max(infos, key=lambda i: i.file_size)
            where = f"{self.path}:{largest.filename}" if largest.file_size > self.limit else \
                f"{self.path} (its {len(infos)} members together, uncompressed)"
            raise too_big(where, self.limit)

    def verify(self, infos: Iterable[zipfile.ZipInfo]) -> None:
        """Decompress every member of `infos` and drop the bytes: sizes and CRC-32s checked, memory bounded.

        Raises:
            InputError: a member over its declared size or the limit, or damaged (the member named).
        """
        infos = list(infos)
        self.check_sizes(infos)
        for info in infos:
            for _ in self.chunks(info):
                pass

    def read(self, info: zipfile.ZipInfo) -> bytes:
        """One member's bytes, read with the bound of :meth:`chunks`."""
        self.check_sizes([info])
        return b"".join(self.chunks(info))

    def chunks(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """One member's bytes in chunks, stopped where they pass the declared size; size and CRC-32 checked at the end.

        Raises:
            InputError: the member passes its declared size, is shorter, fails its CRC-32, or cannot be decompressed.
        """
        where = f"{self.path}:{info.filename}"
        if info.file_size > self.limit:
            raise too_big(where, self.limit)
        size, crc = 0, 0
        try:
            for block in (self._zstd(info, where) if info.compress_type == ZSTD else self._zipfile(info)):
                size += len(block)
                if size > info.file_size:
                    raise InputError(f"{where}: decompresses to more than the {info.file_size:,} bytes the archive "
                                     "declares for it; the file is damaged (or built to exhaust memory), nothing was "
                                     "written")
                crc = zlib.crc32(block, crc)
                yield block
        except InputError:
            raise
        except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError, RuntimeError, ValueError) as exc:
            raise InputError(f"{where}: cannot be decompressed ({exc}); the file is damaged, copy or download it "
                             "again") from exc
        if size != info.file_size or crc != info.CRC:
            what = f"{size:,} bytes where the archive declares {info.file_size:,}" if size != info.file_size else \
                "its CRC-32 differs from the archive's directory"
            raise InputError(f"{where}: damaged member ({what}); copy or download the file again")

    def _zipfile(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """A member of a method zipfile knows, read by zipfile in chunks (zipfile stops at the declared size)."""
        with self.archive.open(info) as handle:
            while block := handle.read(_CHUNK):
                yield block

    def _zstd(self, info: zipfile.ZipInfo, where: str) -> Iterator[bytes]:
        """A Zstandard member's bytes, streamed from its compressed data in the archive."""
        import zstandard

        start = info.header_offset
        header = self.data[start: start + _LOCAL.size]
        if len(header) != _LOCAL.size or _LOCAL.unpack(header)[0] != b"PK\x03\x04":
            raise InputError(f"{where}: no local header where the archive's directory points; the file is damaged")
        name_len, extra_len = _LOCAL.unpack(header)[1:]
        name = self.data[start + _LOCAL.size: start + _LOCAL.size + name_len]
        if name.decode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace") != info.orig_filename:
            raise InputError(f"{where}: the local header names another member ({name[:60]!r}); the file is damaged")
        begin = start + _LOCAL.size + name_len + extra_len
        raw = self.data[begin: begin + info.compress_size]
        if len(raw) != info.compress_size:
            raise InputError(f"{where}: the archive ends inside this member (truncated)")
        try:
            reader = zstandard.ZstdDecompressor(max_window_size=_WINDOW).stream_reader(io.BytesIO(raw),
                                                                                        read_across_frames=True)
            while block := reader.read(_CHUNK):
                yield block
        except zstandard.ZstdError as exc:
            raise InputError(f"{where}: not valid Zstandard data ({exc}); the file is damaged") from exc
