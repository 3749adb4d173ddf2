"""A judge behind any OpenAI-compatible chat-completions endpoint (OpenAI, Azure v1, vLLM, TGI, llama.cpp).

Configured by environment variables (the model comes from ``--judge openai:MODEL``):

- ``CAPTRACK_JUDGE_URL``: base URL up to and including ``/v1`` (falls back to ``OPENAI_BASE_URL``,
  then ``https://api.openai.com/v1``); requests go to ``{URL}/chat/completions``.
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
from urllib.parse import urlsplit

import httpx

from captrack.judges.base import (
    Judge,
    JudgeError,
    JudgeOptions,
    Message,
    RetryableError,
    judge_backend,
)

__all__ = ["OpenAICompatibleJudge"]


def _env(*names: str, default: str = "") -> str:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return default


class OpenAICompatibleJudge(Judge):
    """POST /chat/completions, greedy (temperature 0), one attempt per call."""

    def __init__(self, model: str, options: JudgeOptions, url: str | None = None, api_key: str | None = None) -> None:
        self.model = model
        self.options = options
        self.url = (url or _env("CAPTRACK_JUDGE_URL", "OPENAI_BASE_URL", default="https://api.openai.com/v1")).rstrip("/")
        key = api_key if api_key is not None else _env("CAPTRACK_JUDGE_API_KEY", "OPENAI_API_KEY")
        header = _env("CAPTRACK_JUDGE_AUTH_HEADER", default="Authorization")
        headers = {}
        if key:
            headers[header] = f"Bearer {key}" if header.lower() == "authorization" else key
        parts = urlsplit(self.url)
        self.id = f"openai:{model}@{parts.netloc}{parts.path}"
        self._client = httpx.Client(timeout=httpx.Timeout(options.timeout), headers=headers,
                                    limits=httpx.Limits(max_connections=self.concurrency))

    def attempt(self, messages: list[Message]) -> str:
        """One chat-completions request; transport errors, timeouts, 408, 409, 429, 5xx and bad bodies are retryable."""
        body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": self.options.max_tokens}
        try:
            response = self._client.post(f"{self.url}/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise RetryableError("timeout", f"no reply within {self.options.timeout:g} s ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise RetryableError("transport", f"{type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status == 429:
            raise RetryableError("rate_limited", "HTTP 429", _retry_after(response.headers.get("retry-after")))
        if status >= 500 or status in (408, 409):  # 408 request timeout, 409 conflict: transient per OpenAI's guidance
            code = "server_error" if status >= 500 else f"http_{status}"
            raise RetryableError(code, f"HTTP {status}", _retry_after(response.headers.get("retry-after")))
        if status >= 400:
            raise JudgeError(f"http_{status}", response.text[:200])
        return _content(response)

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()


def _content(response: httpx.Response) -> str:
    """choices[0].message.content of a chat-completions body; anything else is a malformed reply."""
    try:
        data: Any = response.json()
        content = data["choices"][0]["message"]["content"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
        raise RetryableError("malformed_response", f"not a chat-completions body: {response.text[:120]!r}") from exc
    if content is None:
        return ""
    if not isinstance(content, str):
        raise RetryableError("malformed_response", f"message content is {type(content).__name__}, not text")
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
