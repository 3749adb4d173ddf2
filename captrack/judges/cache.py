"""The persistent judge cache: SQLite, one row per (judge id, prompt version, input hash) → reply text.

Only replies are cached (the text the judge answered, parsable or not); a request that got no reply
(timeout, 5xx after retries, spent budget) is not, and neither is an empty or blank reply (a blank one
stored by an earlier captrack reads as absent), so the next run asks again. Parsing runs on the
cached text, so a fixed parser re-reads old replies without asking the judge again.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from captrack.errors import InputError
from captrack.paths import cache_dir

__all__ = ["JudgeCache", "cache_key", "default_cache_path"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY, judge TEXT NOT NULL, prompt TEXT NOT NULL, reply TEXT NOT NULL, created REAL NOT NULL
)"""


def default_cache_path() -> Path:
    """``$CAPTRACK_JUDGE_CACHE``, else ``<captrack cache>/judges.sqlite``."""
    import os

    env = os.environ.get("CAPTRACK_JUDGE_CACHE")
    return Path(env) if env else cache_dir() / "judges.sqlite"


def cache_key(judge_id: str, settings: dict[str, Any], prompt: str, messages: list[dict[str, str]]) -> str:
    """sha256 over the judge id, its generation settings, the prompt's name@version and the rendered messages."""
    payload = json.dumps([judge_id, settings, prompt, messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache:
    """A thread-safe SQLite cache of judge replies (WAL mode, so several processes can share it)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._con = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute(_SCHEMA)
            self._con.commit()
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"{self.path}: cannot open the judge cache: {exc} (pass --judge-cache PATH)") from exc
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        """The cached reply, or None (also for a blank reply cached by an earlier captrack)."""
        with self._lock:
            row = self._con.execute("SELECT reply FROM replies WHERE key = ?", [key]).fetchone()
        return None if row is None or not str(row[0]).strip() else str(row[0])

    def put(self, key: str, judge: str, prompt: str, reply: str) -> None:
        """Store a reply (committed at once, so an interrupted run keeps what it paid for); blank replies are not stored."""
        if not reply.strip():
            return
        with self._lock:
            self._con.execute("INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?)", [key, judge, prompt, reply, time.time()])
            self._con.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._con.execute("SELECT count(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        self._con.close()
