"""Benchmark: `captrack import --format inspect` of Zstandard bombs, its peak memory and exit code.

    python tests/benchmarks/bench_import_bomb.py [--gb 4] [--workdir /tmp/captrack-bomb]

Builds Inspect ``.eval`` archives (a valid ``header.json`` and one ``samples/1_epoch_1.json`` member whose
Zstandard data, run-length blocks with a 128 MiB window, the largest zstd allows by default, expands to
``--gb`` GB of spaces), then runs ``captrack import`` on each under ``/usr/bin/time -v``, with inspect_ai's reader (``auto``) and with
captrack's bounded reader (``CAPTRACK_INSPECT_READER=captrack``), and prints the file size, what the archive
declares for the member, the exit code, the peak resident memory and the message:

- ``honest``: the member declares its real size (over the import limit: refused before decompressing);
- ``lying``: the member declares 1,000 bytes (refused once it yields more than that);
- ``under-limit``: the member declares 500 MiB, just under the default limit of 512 MiB;
- ``two-members``: a 64 KB archive of two members of half the size each, both declaring 1,000 bytes.

A single zstd member cannot expand to 4 GB in 64 KB: a zstd block regenerates at most 128 KiB, and the
smallest block (run-length) takes 4 bytes, so 4 GB need about 120 KB. It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = 1 << 17
LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"
_LAYOUT = {LOCAL: (26, 30), CENTRAL: (28, 46)}  # where the name length is, where the name starts
HEADER = {"version": 2, "status": "success",
          "eval": {"created": "2026-11-27T19:00:00+00:00", "task": "bomb", "model": "mockllm/model",
                   "dataset": {"name": "bomb", "samples": 1}, "config": {}}}


def zstd_rle(size: int, window_log: int = 27) -> bytes:
    """A Zstandard frame of `size` spaces made of run-length blocks (4 bytes per 128 KiB), window 2**window_log."""
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out += bytes([0x00, (window_log - 10) << 3])  # no content size, not single segment; the window descriptor
    left = size
    while left > 0:
        n = min(_BLOCK, left)
        left -= n
        out += ((n << 3) | (1 << 1) | (left == 0)).to_bytes(3, "little") + b" "
    return bytes(out)


def write_eval_bomb(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    """An .eval archive: header.json, then each member's Zstandard data (method 93) declaring the given size."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        for name, (data, _) in members.items():
            archive.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_STORED)
    raw = bytearray(path.read_bytes())
    for name, (_, declared) in members.items():
        encoded = name.encode()
        local, central = find_header(raw, LOCAL, encoded), find_header(raw, CENTRAL, encoded)
        crc = zlib.crc32(b" " * declared) if declared <= 1 << 20 else 0  # right for a member that is not a bomb
        for at, method, crc_at, size_at in ((local, 8, 14, 22), (central, 10, 16, 24)):
            struct.pack_into("<H", raw, at + method, 93)
            struct.pack_into("<I", raw, at + crc_at, crc)
            struct.pack_into("<I", raw, at + size_at, declared)
    path.write_bytes(bytes(raw))
    return path


def find_header(raw: bytes | bytearray, signature: bytes, name: bytes) -> int:
    """The offset of the local (LOCAL) or central directory (CENTRAL) header of member `name`."""
    name_len_at, fixed = _LAYOUT[signature]
    at = raw.find(signature)
    while at >= 0:
        n = struct.unpack_from("<H", raw, at + name_len_at)[0]
        if raw[at + fixed: at + fixed + n] == name:
            return at
        at = raw.find(signature, at + 1)
    raise LookupError(name)


def _run(path: Path, out: Path, reader: str) -> tuple[int, int, str]:
    """(exit code, peak RSS in kB, last line of stderr) of `captrack import` on `path` with CAPTRACK_INSPECT_READER."""
    command = ["/usr/bin/time", "-v", str(ROOT / ".venv" / "bin" / "captrack"), "import", str(path),
               "--format", "inspect", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env={**os.environ, "NO_COLOR": "1", "CAPTRACK_INSPECT_READER": reader})
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))  # type: ignore[union-attr]
    said = [line for line in done.stderr.splitlines() if line.startswith(("error", "Traceback", "MemoryError"))]
    return done.returncode, peak, " | ".join(said)[:300]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gb", type=float, default=4.0, help="what the bomb expands to, in GB (10**9 bytes)")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="captrack-bomb-"))
    work.mkdir(parents=True, exist_ok=True)
    size = int(args.gb * 1e9)
    member = "samples/1_epoch_1.json"
    cases = {
        "honest": {member: (zstd_rle(size), min(size, 0xFFFFFFFF))},
        "lying": {member: (zstd_rle(size), 1000)},
        "under-limit": {member: (zstd_rle(size), 500 << 20)},
        "two-members": {member: (zstd_rle(size // 2), 1000), "samples/2_epoch_1.json": (zstd_rle(size // 2), 1000)},
    }
    print(f"captrack import --format inspect of a Zstandard bomb expanding to {size / 1e9:g} GB in all "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    for name, members in cases.items():
        path = write_eval_bomb(work / f"{name}.eval", members)
        declared = ", ".join(f"{d:,}" for _, d in members.values())
        print(f"{name:12s} file {path.stat().st_size / 1024:6.1f} KiB, the member declares {declared} bytes")
        for reader in ("auto", "captrack"):
            shutil.rmtree(work / f"{name}-run", ignore_errors=True)
            code, peak, said = _run(path, work / f"{name}-run", reader)
            print(f"    reader {reader:8s}: exit {code}, peak RSS {peak / 1024:6.1f} MiB, run folder written: "
                  f"{(work / f'{name}-run').exists()}; {said}")


if __name__ == "__main__":
    main()
