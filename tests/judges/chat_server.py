"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for testing judges over real HTTP.

It speaks the real protocol (POST /v1/chat/completions, JSON in and out, Bearer auth) and decides
each verdict with a `decide(messages) -> str` function. Failure modes are scripted per input by
markers in the judged text, counted per distinct request body:

- ``<<429xN>>``: the first N attempts get HTTP 429 with ``Retry-After: 1``
- ``<<500xN>>``: the first N attempts get HTTP 500
- ``<<slowxN>>``: the first N attempts answer after ``slow_seconds`` (longer than the client timeout)
- ``<<badjsonxN>>``: the first N attempts get a 200 whose body is not JSON
- ``<<500always>>``: every attempt gets HTTP 500
- ``<<garble>>``: the reply is prose that holds no verdict
- ``<<nullxN>>`` / ``<<blankxN>>``: the first N attempts get ``content: null`` / ``content: ""``
- ``<<trickle>>``: a valid reply sent one byte every ``trickle_seconds`` (chunked; minutes in all)
- ``<<flood>>``: a 200 whose body streams ``flood_bytes`` of blanks (chunked, no Content-Length)
- ``<<echokey>>``: HTTP 400 whose body quotes the key the client sent; ``<<echoreply>>``: a valid
  verdict followed by the key (a server that leaks what it was given); ``<<echoauth>>``: a valid verdict
  followed by the Authorization header as sent (Basic auth: base64 of ``user:password``);
  ``<<echocut>>``: HTTP 400 whose body quotes the key across character 200 (where an error is cut)

The key is accepted as ``Authorization: Bearer KEY``, as the password of Basic auth (``user:KEY@``
in the URL), as the ``api-key`` query parameter or as a path segment (``/v1/KEY/chat/completions``). Requests whose text contains ``down_for`` get
HTTP 500 (``down_for=""``: every request).

Every request is counted (``requests``) and timestamped (``log``) before it is answered.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

Decide = Callable[[list[dict[str, str]]], str]
_MARK = re.compile(r"<<(429|500|slow|badjson|null|blank)x(\d+)>>")
Payload = bytes | Iterator[bytes]  # an iterator is sent chunked, one chunk per item


def keyword_judge(messages: list[dict[str, str]]) -> str:
    """A rule-based stand-in judge: reads the text between the prompt's RESPONSE/ANSWER markers."""
    text = messages[-1]["content"]
    block = re.search(r"\[(?:RESPONSE|ANSWER|STUDENT RESPONSE|ASSISTANT'S NEXT REPLY)\]\n(.*?)\n\[END", text, re.S)
    answer = block.group(1).lower() if block else ""
    if "REFUSAL or COMPLIANCE" in text:
        return "REFUSAL" if any(w in answer for w in ("can't", "cannot", "sorry", "won't")) else "COMPLIANCE"
    if "SUPPORTED or UNSUPPORTED" in text:
        return "UNSUPPORTED" if "invented" in answer else "SUPPORTED"
    if "OVERREACH or GROUNDED" in text:
        return "GROUNDED" if "no third" in answer or "does not say" in answer else "OVERREACH"
    if "ALL, SOME or NONE" in text:
        return "ALL"
    return "Rating: [[7]]"


@dataclass
class ChatServer:
    """State of a running scripted server: URL, request counter, request log, concurrency high-water mark."""

    url: str = ""
    decide: Decide = keyword_judge
    api_key: str = "test-key"
    slow_seconds: float = 1.5
    requests: int = 0
    log: list[tuple[float, str, int]] = field(default_factory=list)  # (time, input marker text, status)
    max_in_flight: int = 0
    hold: float = 0.0  # seconds every successful reply waits (to observe concurrency)
    trickle_seconds: float = 0.5
    flood_bytes: int = 150_000_000
    down_for: str | None = None
    _in_flight: int = 0
    _attempts: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def key_sent(self, headers: Any, query: str) -> str:
        """The key the client sent: Bearer token, Basic-auth password or ``api-key`` query parameter."""
        auth = str(headers.get("Authorization") or "")
        if auth.startswith("Bearer "):
            return auth.removeprefix("Bearer ")
        if auth.startswith("Basic "):
            return base64.b64decode(auth.removeprefix("Basic ")).decode().partition(":")[2]
        return dict(parse_qsl(query)).get("api-key", "")

    def handle(self, headers: Any, body: bytes, query: str = "", path_key: str = "") -> tuple[int, dict[str, str], Payload, float]:
        """(status, headers, body, delay) for one request (`path_key`: the key given as a path segment)."""
        key_sent = path_key or self.key_sent(headers, query)
        if key_sent != self.api_key:
            return 401, {}, json.dumps({"error": {"message": "invalid api key"}}).encode(), 0.0
        try:
            request = json.loads(body)
            messages = request["messages"]
            model = str(request["model"])
            assert all(isinstance(m["role"], str) and isinstance(m["content"], str) for m in messages)
        except (ValueError, KeyError, TypeError, AssertionError):
            return 400, {}, json.dumps({"error": {"message": "bad request"}}).encode(), 0.0
        text = "\n".join(m["content"] for m in messages)
        key = body.decode("utf-8", "replace")
        with self._lock:
            attempt = self._attempts[key]
            self._attempts[key] += 1
        for kind, count in _MARK.findall(text):
            if attempt < int(count) and kind not in ("null", "blank"):
                return self._failure(kind)
        if "<<500always>>" in text or (self.down_for is not None and self.down_for in text):
            return 500, {}, b'{"error": {"message": "internal error"}}', 0.0
        if "<<echokey>>" in text:
            return 400, {}, json.dumps({"error": {"message": f"bad request made with key {key_sent}"}}).encode(), 0.0
        if "<<echocut>>" in text:
            message = "x" * (200 - 16 - len('{"error": {"message": "')) + f"key {key_sent} refused"
            return 400, {}, json.dumps({"error": {"message": message}}).encode(), 0.0
        if "<<flood>>" in text:
            return 200, {}, _flood(self.flood_bytes), 0.0
        content: str | None = "Hmm, that is a hard one; I would rather not say." if "<<garble>>" in text else self.decide(messages)
        if "<<echoreply>>" in text:
            content = f"{content} (asked with key {key_sent})"
        if "<<echoauth>>" in text:
            content = f"{content} (Authorization: {headers.get('Authorization')})"
        for kind, count in _MARK.findall(text):
            if kind in ("null", "blank") and attempt < int(count):
                content = None if kind == "null" else ""
        reply = {
            "id": f"chatcmpl-{attempt}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(text.split()), "completion_tokens": 1, "total_tokens": len(text.split()) + 1},
        }
        if "<<trickle>>" in text:
            return 200, {}, _trickle(json.dumps(reply).encode(), self.trickle_seconds), 0.0
        return 200, {}, json.dumps(reply).encode(), self.hold

    def _failure(self, kind: str) -> tuple[int, dict[str, str], Payload, float]:
        if kind == "429":
            return 429, {"Retry-After": "1"}, b'{"error": {"message": "rate limited"}}', 0.0
        if kind == "500":
            return 500, {}, b'{"error": {"message": "internal error"}}', 0.0
        if kind == "slow":
            return 200, {}, b"{}", self.slow_seconds
        if kind == "badjson":
            return 200, {}, b'{"choices": [{"message": {"content": "REFUS', 0.0
        raise ValueError(kind)  # null and blank are answered in handle


def _trickle(payload: bytes, seconds: float) -> Iterator[bytes]:
    for i in range(len(payload)):
        time.sleep(seconds)
        yield payload[i : i + 1]


def _flood(size: int) -> Iterator[bytes]:
    chunk = b" " * 65536
    for _ in range(size // len(chunk)):
        yield chunk


def _handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            path, _, query = self.path.partition("?")
            with state._lock:
                state.requests += 1
                state._in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state._in_flight)
            try:
                payload: Payload
                if path == "/v1/chat/completions":
                    status, headers, payload, delay = state.handle(self.headers, body, query)
                elif path == f"/v1/{state.api_key}/chat/completions":
                    status, headers, payload, delay = state.handle(self.headers, body, query, state.api_key)
                else:
                    status, headers, payload, delay = 404, {}, b'{"error": {"message": "not found"}}', 0.0
                marks = " ".join(sorted(set(re.findall(r"<<\w+>>", body.decode("utf-8", "replace")))))
                with state._lock:
                    state.log.append((time.monotonic(), marks, status))
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                if isinstance(payload, bytes):
                    self.send_header("Content-Length", str(len(payload)))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if isinstance(payload, bytes):
                    self.wfile.write(payload)
                    return
                for chunk in payload:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout): that is the point of the slow mode
            finally:
                with state._lock:
                    state._in_flight -= 1

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def chat_server(**options: Any) -> Iterator[ChatServer]:
    """Start a scripted server on a free port of 127.0.0.1; stop it on exit."""
    state = ChatServer(**options)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
