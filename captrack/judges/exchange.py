"""One HTTP request under a total deadline and a reply-size cap.

httpx's timeouts bound each network operation, not the request: a server that sends one byte
every second never trips a 3 s read timeout. `post_bounded` runs the request in a worker thread
and stops waiting at ``timeout`` seconds after the call, whatever phase it is in (connect, headers,
body); the worker checks the deadline after every chunk it reads and drops the connection, so it
ends at most one read timeout later. The body is streamed and counted: past ``max_bytes`` the
reply is refused (``too_large``) without reading the rest.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from captrack.judges.base import JudgeError, RetryableError

__all__ = ["Reply", "post_bounded"]


@dataclass(frozen=True)
class Reply:
    """A complete HTTP reply read within the deadline and the size cap."""

    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def text(self) -> str:
        """The body as text (undecodable bytes replaced)."""
        return self.body.decode("utf-8", "replace")


class _Outcome:
    """What the worker thread hands back: a reply or the exception it raised."""

    def __init__(self) -> None:
        self.reply: Reply | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.cancelled = threading.Event()


def post_bounded(
    client: httpx.Client, url: str, payload: dict[str, Any], params: httpx.QueryParams,
    timeout: float, max_bytes: int,
) -> Reply:
    """POST `payload` as JSON and read the whole reply within `timeout` seconds in total, at most `max_bytes`.

    Raises:
        RetryableError: ``timeout`` (the deadline passed) or ``transport`` (connection failed or dropped).
        JudgeError: ``too_large`` (the reply is longer than `max_bytes`; another try would be too).
    """
    deadline = time.monotonic() + timeout
    outcome = _Outcome()

    def work() -> None:
        try:
            outcome.reply = _exchange(client, url, payload, params, deadline, max_bytes, outcome.cancelled)
        except BaseException as exc:  # handed to the caller, who re-raises it
            outcome.error = exc
        finally:
            outcome.done.set()

    threading.Thread(target=work, name="judge-request", daemon=True).start()
    if not outcome.done.wait(timeout):
        outcome.cancelled.set()
        raise RetryableError("timeout", f"no complete reply within {timeout:g} s")
    if outcome.error is not None:
        raise _translate(outcome.error, timeout)
    if outcome.reply is None:  # cannot happen: the worker sets a reply or an error before `done`
        raise RuntimeError("judge request ended with neither a reply nor an error")
    return outcome.reply


def _translate(error: BaseException, timeout: float) -> BaseException:
    """httpx's exceptions as the judge's NaN reasons (anything else unchanged)."""
    if isinstance(error, httpx.TimeoutException):
        return RetryableError("timeout", f"no complete reply within {timeout:g} s ({type(error).__name__})")
    if isinstance(error, httpx.TransportError):
        return RetryableError("transport", f"{type(error).__name__}: {error}")
    return error


def _exchange(
    client: httpx.Client, url: str, payload: dict[str, Any], params: httpx.QueryParams,
    deadline: float, max_bytes: int, cancelled: threading.Event,
) -> Reply:
    with client.stream("POST", url, json=payload, params=params) as response:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise JudgeError("too_large", f"the reply declares {int(declared)} bytes; the cap is {max_bytes} (--max-reply-bytes)")
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise JudgeError("too_large", f"the reply passed {max_bytes} bytes (--max-reply-bytes); the rest was not read")
            if cancelled.is_set() or time.monotonic() > deadline:
                raise RetryableError("timeout", "deadline passed while reading the reply")
            chunks.append(chunk)
        return Reply(response.status_code, response.headers, b"".join(chunks))
