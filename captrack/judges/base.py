"""The Judge interface, its errors, and the registry of judge backends (``--judge KIND:NAME``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captrack.errors import InputError
from captrack.registries import Registry

__all__ = [
    "BACKENDS",
    "Judge",
    "JudgeError",
    "JudgeOptions",
    "Message",
    "RetryableError",
    "judge_backend",
    "make_judge",
]

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}


@dataclass(frozen=True)
class JudgeOptions:
    """How a judge is asked: reply length, deadline per request, reply-size cap, retries, backoff and concurrency."""

    max_tokens: int = 64
    timeout: float = 60.0  # seconds per attempt, all of it: connect, headers and body
    max_reply_bytes: int = 1_000_000  # a longer HTTP reply is refused unread (NaN, reason ``too_large``)
    retries: int = 4
    backoff: float = 1.0  # first backoff in seconds; doubles per retry, with full jitter
    max_backoff: float = 30.0  # no single wait (Retry-After included) is longer
    concurrency: int = 4


class JudgeError(Exception):
    """A request that got no usable reply; `code` becomes the NaN reason (``http_401``, ``timeout`` ...)."""

    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class RetryableError(JudgeError):
    """A transient failure (transport error, timeout, 429, 5xx, malformed body): worth another try."""

    def __init__(self, code: str, detail: str = "", retry_after: float | None = None) -> None:
        super().__init__(code, detail)
        self.retry_after = retry_after


class Judge(ABC):
    """A model that answers judge prompts. Backends implement one attempt; retries live outside."""

    #: Identifies the judge in every judged row and in the cache key (e.g. ``openai:gpt-4o-mini@host``).
    id: str
    options: JudgeOptions

    @abstractmethod
    def attempt(self, messages: list[Message]) -> str:
        """Ask once and return the reply text.

        Raises:
            RetryableError: a transient failure.
            JudgeError: a failure that another try will not fix (bad key, bad request).
        """

    @property
    def concurrency(self) -> int:
        """How many requests may be in flight at once."""
        return max(1, self.options.concurrency)

    def settings(self) -> dict[str, Any]:
        """Generation settings that can change a verdict (part of the cache key)."""
        return {"temperature": 0, "max_tokens": self.options.max_tokens}

    def close(self) -> None:  # noqa: B027  (optional hook: most backends hold nothing to release)
        """Release connections or memory (default: nothing to do)."""


Factory = Callable[[str, JudgeOptions], Judge]
BACKENDS: Registry[Factory] = Registry("judge backend", scan="captrack.judges", marker="@judge_backend(")
"""Every judge backend by kind; a module of captrack.judges with a line starting ``@judge_backend(`` is loaded on first use."""


def judge_backend(kind: str) -> Callable[[Factory], Factory]:
    """Register a judge backend under ``kind`` (the part of ``--judge KIND:NAME`` before the colon)."""
    return BACKENDS.register(kind)


def make_judge(spec: str, options: JudgeOptions = JudgeOptions()) -> Judge:
    """Build the judge named by `spec`: ``openai:MODEL`` (URL and key from the environment) or ``hf:PATH``.

    Raises:
        InputError: a spec without ``KIND:``; UnknownNameError: an unknown kind (close matches listed).
    """
    kind, sep, name = spec.partition(":")
    if not sep or not name:
        raise InputError(
            f"--judge {spec!r}: expected KIND:NAME, e.g. openai:gpt-4o-mini (an OpenAI-compatible server "
            "set by CAPTRACK_JUDGE_URL) or hf:smollm2-135m-instruct (a local model path or alias)"
        )
    return BACKENDS.get(kind)(name, options)
