"""A judge behind any OpenAI-compatible chat-completions endpoint (OpenAI, Azure v1, vLLM, TGI, llama.cpp).

Configured by environment variables (the model comes from ``--judge openai:MODEL``):

- ``CAPTRACK_JUDGE_URL``: base URL up to and including ``/v1`` (falls back to ``OPENAI_BASE_URL``,
  then ``https://api.openai.com/v1``); requests go to ``{URL}/chat/completions`` (a query such as
  ``?api-version=...`` is kept). Credentials in it (``user:KEY@``, ``?api-key=KEY``) are sent but
  never printed or stored: the judge id is ``openai:MODEL@HOST[:PORT]/PATH``, a path segment that is the key
  or looks like one masked (``.../v1/***``). ``user:password@`` is sent as Basic auth.
- ``CAPTRACK_JUDGE_API_KEY``: the key (falls back to ``OPENAI_API_KEY``; may be empty for local servers).
- ``CAPTRACK_JUDGE_AUTH_HEADER``: ``Authorization`` (default, sent as ``Bearer KEY``) or e.g. ``api-key``
  (Azure), sent as the bare key.
"""

from __future__ import annotations

import email.utils
import json
import os
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from captrack.errors import InputError
from captrack.judges.base import (
    Judge,
    JudgeError,
    JudgeOptions,
    Message,
    RetryableError,
    judge_backend,
)
from captrack.judges.exchange import Reply, post_bounded
from captrack.judges.redact import Secrets, host_and_path, redact_url

__all__ = ["OpenAICompatibleJudge"]


def _env(*names: str, default: str = "") -> str:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return default


class OpenAICompatibleJudge(Judge):
    """POST /chat/completions, greedy (temperature 0), one attempt per call.

    Every attempt has one deadline (``options.timeout``, connect to last byte) and a reply-size cap
    (``options.max_reply_bytes``). Credentials in the URL or the key never reach the judge id,
    messages or stored replies (see captrack.judges.redact).
    """

    def __init__(self, model: str, options: JudgeOptions, url: str | None = None, api_key: str | None = None) -> None:
        self.model = model
        self.options = options
        raw = (url or _env("CAPTRACK_JUDGE_URL", "OPENAI_BASE_URL", default="https://api.openai.com/v1")).strip()
        key = api_key if api_key is not None else _env("CAPTRACK_JUDGE_API_KEY", "OPENAI_API_KEY")
        self._secrets = Secrets.of(raw, key)
        parts = urlsplit(raw)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"judge URL {redact_url(raw, (key,))!r} (CAPTRACK_JUDGE_URL): expected http(s)://HOST[:PORT]/PATH, "
                             "e.g. https://api.openai.com/v1")
        path = parts.path.rstrip("/")
        # The real URL (credentials included) is used for the request only; the query travels as params.
        self._endpoint = urlunsplit((parts.scheme, parts.netloc, f"{path}/chat/completions", "", ""))
        self._params = httpx.QueryParams(parts.query)
        # Written everywhere: no user:password, secret query values and key-like path segments masked.
        self.url = redact_url(urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")), (key,))
        self.id = f"openai:{model}@{host_and_path(self.url)}"
        header = _env("CAPTRACK_JUDGE_AUTH_HEADER", default="Authorization")
        headers = {"Accept-Encoding": "identity"}  # the size cap counts bytes as they arrive: no compressed bodies
        if key:
            headers[header] = f"Bearer {key}" if header.lower() == "authorization" else key
        self._client = httpx.Client(timeout=httpx.Timeout(options.timeout), headers=headers,
                                    limits=httpx.Limits(max_connections=self.concurrency))

    def attempt(self, messages: list[Message]) -> str:
        """One chat-completions request; transport errors, timeouts, 408, 409, 429, 5xx and bad bodies are retryable.

        Secrets are scrubbed from the reply and from every error detail.
        """
        try:
            return self._secrets.scrub(self._attempt(messages))
        except RetryableError as exc:
            raise RetryableError(exc.code, self._secrets.scrub(exc.detail), exc.retry_after) from None
        except JudgeError as exc:
            raise JudgeError(exc.code, self._secrets.scrub(exc.detail)) from None

    def _attempt(self, messages: list[Message]) -> str:
        body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": self.options.max_tokens}
        response = post_bounded(self._client, self._endpoint, body, self._params, self.options.timeout,
                                self.options.max_reply_bytes)
        status = response.status
        if status == 429:
            raise RetryableError("rate_limited", "HTTP 429", _retry_after(response.headers.get("retry-after")))
        if status >= 500 or status in (408, 409):  # 408 request timeout, 409 conflict: transient per OpenAI's guidance
            code = "server_error" if status >= 500 else f"http_{status}"
            raise RetryableError(code, f"HTTP {status}", _retry_after(response.headers.get("retry-after")))
        text = self._secrets.scrub(response.text)  # before any cut: a cut must never split a secret
        if status >= 400:
            raise JudgeError(f"http_{status}", text[:200])
        return _content(response, text)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()


def _content(response: Reply, text: str) -> str:
    """choices[0].message.content of a chat-completions body; anything else is a malformed reply
    (quoted from `text`, the body with its secrets already scrubbed).

    Raises:
        JudgeError: ``empty_reply`` when the content is null or blank (never cached: the next run asks again).
    """
    try:
        data: Any = json.loads(response.body)
        content = data["choices"][0]["message"]["content"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
        raise RetryableError("malformed_response", f"not a chat-completions body: {text[:120]!r}") from exc
    if content is not None and not isinstance(content, str):
        raise RetryableError("malformed_response", f"message content is {type(content).__name__}, not text")
    if content is None or not content.strip():
        raise JudgeError("empty_reply", "the message content is " + ("null" if content is None else "blank"))
    return content


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@judge_backend("openai")
def _openai(name: str, options: JudgeOptions) -> Judge:
    return OpenAICompatibleJudge(name, options)
