"""Asking a judge with retries (exponential backoff, full jitter, Retry-After) under a request budget."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from captrack.judges.base import Judge, JudgeError, Message, RetryableError

__all__ = ["Budget", "ask", "backoff_delay"]


class Budget:
    """A thread-safe cap on judge requests (every attempt counts, retries included); None = no cap."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Reserve one request; False when the budget is spent."""
        with self._lock:
            if self.limit is not None and self.used >= self.limit:
                return False
            self.used += 1
            return True


def backoff_delay(attempt: int, base: float, cap: float, retry_after: float | None, rng: random.Random) -> float:
    """Seconds to wait before retry number `attempt` (0-based): full jitter on base·2^attempt,
    at least the server's Retry-After, never more than `cap`."""
    jittered = rng.uniform(0.0, min(cap, base * 2**attempt))
    if retry_after is not None:
        jittered = max(jittered, retry_after)
    return min(jittered, cap)


def ask(
    judge: Judge, messages: list[Message], budget: Budget,
    sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
) -> str:
    """One judge reply, retrying transient failures up to ``judge.options.retries`` times.

    Raises:
        JudgeError: the last failure once retries are spent (code ``budget`` when the cap was hit).
    """
    rng = rng or random.Random()
    options = judge.options
    last: RetryableError | None = None
    for attempt in range(options.retries + 1):
        if attempt:
            sleep(backoff_delay(attempt - 1, options.backoff, options.max_backoff, last.retry_after if last else None, rng))
        if not budget.take():
            raise JudgeError("budget", f"--judge-budget {budget.limit} requests spent")
        try:
            return judge.attempt(messages)
        except RetryableError as exc:
            last = exc
    assert last is not None
    raise JudgeError(last.code, f"{last.detail} (after {options.retries + 1} attempts)")
