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

Every request is counted (``requests``) and timestamped (``log``) before it is answered.
"""

from __future__ import annotations

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

Decide = Callable[[list[dict[str, str]]], str]
_MARK = re.compile(r"<<(429|500|slow|badjson)x(\d+)>>")


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
    _in_flight: int = 0
    _attempts: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, headers: Any, body: bytes) -> tuple[int, dict[str, str], bytes, float]:
        """(status, headers, body, delay) for one request."""
        if headers.get("Authorization") != f"Bearer {self.api_key}":
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
            if attempt < int(count):
                return self._failure(kind)
        if "<<500always>>" in text:
            return 500, {}, b'{"error": {"message": "internal error"}}', 0.0
        content = "Hmm, that is a hard one; I would rather not say." if "<<garble>>" in text else self.decide(messages)
        reply = {
            "id": f"chatcmpl-{attempt}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": len(text.split()), "completion_tokens": 1, "total_tokens": len(text.split()) + 1},
        }
        return 200, {}, json.dumps(reply).encode(), self.hold

    def _failure(self, kind: str) -> tuple[int, dict[str, str], bytes, float]:
        if kind == "429":
            return 429, {"Retry-After": "1"}, b'{"error": {"message": "rate limited"}}', 0.0
        if kind == "500":
            return 500, {}, b'{"error": {"message": "internal error"}}', 0.0
        if kind == "slow":
            return 200, {}, b"{}", self.slow_seconds
        return 200, {}, b'{"choices": [{"message": {"content": "REFUS', 0.0


def _handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with state._lock:
                state.requests += 1
                state._in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state._in_flight)
            try:
                if self.path != "/v1/chat/completions":
                    status, headers, payload, delay = 404, {}, b'{"error": {"message": "not found"}}', 0.0
                else:
                    status, headers, payload, delay = state.handle(self.headers, body)
                marks = " ".join(sorted(set(re.findall(r"<<\w+>>", body.decode("utf-8", "replace")))))
                with state._lock:
                    state.log.append((time.monotonic(), marks, status))
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
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
