"""A stand-in for vLLM's OpenAI-compatible server: ``python completions_standin.py PORT [LOG_REQUESTS]``.

Answers ``/health``, ``/version`` (``{"version": VERSION}``) and ``/v1/completions`` the way lm-eval's
``local-completions`` reads them: token-id prompts, ``echo`` with ``logprobs`` (each prompt token's logprob a fixed
function of the tokens before it, so the same request always gets the same answer) and short generations. Several
clients at once (a thread per request). With LOG_REQUESTS, one line per completions request is appended to it.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading

VERSION = "0.0.0-standin"
_LOCK = threading.Lock()


def _logprob(before: list[int], token: int) -> float:
    return -0.1 * (1 + (sum(before) * 31 + token * 7 + len(before)) % 97)


def _choice(index: int, prompt: list[int], body: dict) -> dict:
    if body.get("echo"):
        logprobs = [None, *(_logprob(prompt[:i], prompt[i]) for i in range(1, len(prompt))), -1.0]
        top = [None, *({"t": value} for value in logprobs[1:])]
        return {"index": index, "text": "", "logprobs": {"token_logprobs": logprobs, "top_logprobs": top}}
    return {"index": index, "text": f" answer {sum(prompt) % 4}", "finish_reason": "stop"}


class Handler(http.server.BaseHTTPRequestHandler):
    requests_log = ""

    def _reply(self, code: int, payload: dict | None = None) -> None:
        data = json.dumps(payload or {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._reply(200)
        elif self.path == "/version":
            self._reply(200, {"version": VERSION})
        else:
            self._reply(404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompts = body["prompt"]
        if prompts and isinstance(prompts[0], int):
            prompts = [prompts]
        if self.requests_log:
            with _LOCK, open(self.requests_log, "a") as sink:
                sink.write(f"{len(prompts)}\n")
        self._reply(200, {"choices": [_choice(i, list(p), body) for i, p in enumerate(prompts)]})

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    Handler.requests_log = sys.argv[2] if len(sys.argv) > 2 else ""
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
