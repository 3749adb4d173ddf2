"""Served evaluation: a checkpoint evaluated through an OpenAI-compatible vLLM server started for it (``serve: vllm``).

:func:`serve` starts the server (``python -m vllm.entrypoints.openai.api_server``, from the vLLM environment's
interpreter) on a free port of 127.0.0.1, in a process group of its own led by a guard
(``captrack/lmeval/server_guard.py``), waits for its ``/health`` with a deadline, and stops the whole group when the
``with`` block ends, however it ends: success, an exception, SIGTERM or Ctrl-C to the job (SIGTERM, then SIGKILL after
a grace). When the job's process dies without cleaning up (``kill -9``), the guard sees its lifeline pipe close and
stops the group itself: no server, engine process or listening port outlives the job. The server's output goes to a
log beside the job's (:func:`server_log`), which every error names.

:func:`evaluate_served` evaluates captrack's tasks against it with lm-eval's ``local-completions`` model: requests are
sent as token ids (the checkpoint's own tokenizer), loglikelihoods come from the prompt's logprobs (``echo`` with
``logprobs``), generations from the completions endpoint; the run folder and the request cache are the same as an
in-process evaluation's.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from captrack.errors import CaptrackError

if TYPE_CHECKING:
    from captrack.lmeval.evaluate import EvalSpec

__all__ = ["SERVED_MODEL", "SERVERS", "Server", "ServerError", "completions_args", "evaluate_served", "evaluate_through",
           "free_port", "serve", "server_log", "vllm_server_command"]

SERVERS = ("vllm",)
"""What ``serve:`` may name."""
SERVED_MODEL = "local-completions"
"""lm-eval's model that evaluates through the server."""
START_DEADLINE_S = 900.0
"""How long the server may take to answer /health (vLLM's engine start was 60-130 s on 2 loaded CPU cores)."""
STOP_GRACE_S = 15.0
_CLIENT_NEEDS = ("aiohttp", "tenacity", "requests", "tqdm")
"""What lm-eval's API models import (its ``api`` extra)."""
_GUARD = Path(__file__).with_name("server_guard.py")
_LMEVAL_ONLY = frozenset({"pretrained", "add_bos_token", "prefix_token_id", "max_gen_toks", "max_length", "batch_size",
                          "device", "lora_local_path", "think_end_token", "enable_thinking", "chat_template_args"})
"""model_args of lm-eval's vllm model that are not flags of vLLM's server."""
LORA_NAME = "captrack-adapter"
"""The name a served checkpoint's LoRA adapter is loaded under (``--lora-modules``), which lm-eval's client asks for."""


class ServerError(CaptrackError):
    """The server exited before it was ready, or did not become ready in time (the message names its log)."""


@dataclass(frozen=True)
class Server:
    """A running server: where it answers and where it writes."""

    url: str
    """``http://127.0.0.1:PORT``."""
    port: int
    log: Path
    process: subprocess.Popen[bytes]
    """The guard leading the server's process group (its PID is the group's)."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 no one listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def server_log(otherwise: Path, name: str = "vllm-server") -> Path:
    """Where the server writes: beside the job's log (the file this process's stdout goes to, as the executors set it:
    ``logs/<stage>.log`` → ``logs/<stage>.vllm-server.log``), else `otherwise`."""
    with contextlib.suppress(OSError):
        out = Path(os.readlink("/proc/self/fd/1"))
        if out.is_file():
            return out.with_name(f"{out.stem}.{name}.log")
    return otherwise


def vllm_server_command(python: str, model_args: Mapping[str, Any], port: int) -> list[str]:
    """vLLM's OpenAI-compatible server for lm-eval `model_args` (``pretrained`` the model; the vLLM engine's arguments
    as flags: ``max_model_len: 512`` → ``--max-model-len 512``, ``enforce_eager: true`` → ``--enforce-eager``; a LoRA
    adapter, ``lora_local_path`` (captrack.backends.adapters.backend_model_args), as the module :data:`LORA_NAME`)."""
    command = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_args["pretrained"]),
               "--host", "127.0.0.1", "--port", str(port), "--disable-uvicorn-access-log"]
    if model_args.get("lora_local_path"):
        command += ["--enable-lora", "--lora-modules", f"{LORA_NAME}={model_args['lora_local_path']}"]
    for key, value in model_args.items():
        if key in _LMEVAL_ONLY or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        command += [flag] if value is True else [flag, str(value)]
    return command


def _server_env(base: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: vLLM's CPU build needs its target device named (captrack.lmeval.vllm_shim)."""
    from captrack.lmeval.vllm_shim import CPU_KV_CACHE_GIB, cpu_build_version

    env = dict(base)
    if cpu_build_version() is not None:
        env.setdefault("VLLM_TARGET_DEVICE", "cpu")
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)
    return env


def _last_line(log: Path) -> str:
    with contextlib.suppress(OSError):
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return f"; its last line: {lines[-1][-300:]}"
    return ""


def _stop(server: Server, grace_s: float) -> None:
    """Stop the server's whole group: SIGTERM, then SIGKILL after `grace_s`; the guard reaped."""
    import signal

    group = server.process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            server.process.poll()  # reap the guard, or it would keep the group alive as a zombie
            os.killpg(group, 0)
            time.sleep(0.2)
        os.killpg(group, signal.SIGKILL)
    server.process.wait()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as reply:
            return int(reply.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def _wait_ready(server: Server, deadline_s: float, what: str) -> None:
    """Return once `server` answers /health.

    Raises:
        ServerError: it exited first, or `deadline_s` passed (one line naming its log).
    """
    started = time.monotonic()
    while not _healthy(server.url):
        code = server.process.poll()
        if code is not None:
            raise ServerError(f"{what} exited with status {code} before it was ready; its log: {server.log}"
                              f"{_last_line(server.log)}")
        if time.monotonic() - started > deadline_s:
            raise ServerError(f"{what} did not answer {server.url}/health within {deadline_s:.0f} s; it was stopped; its "
                              f"log: {server.log}{_last_line(server.log)}")
        time.sleep(1.0)


@contextlib.contextmanager
def serve(command: Sequence[str], port: int, log: Path, *, env: Mapping[str, str] | None = None,
          deadline_s: float = START_DEADLINE_S, grace_s: float = STOP_GRACE_S, what: str = "the server") -> Iterator[Server]:
    """Run server `command` (listening on 127.0.0.1:`port`, writing to `log`) for the ``with`` block, ready when it is
    entered; stopped, with every process it started, when it is left (SIGTERM and SIGINT to this process included).

    Raises:
        ServerError: the server exited before answering /health, or did not answer it within `deadline_s`.
    """
    from captrack.processes import stop_signals_as_interrupt

    log.parent.mkdir(parents=True, exist_ok=True)
    read, write = os.pipe()  # the lifeline: this process alone holds its write end
    try:
        with open(log, "ab") as sink:
            guard = subprocess.Popen([sys.executable, str(_GUARD), str(read), str(grace_s), "--", *command],
                                     env=dict(os.environ if env is None else env), stdout=sink, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, pass_fds=(read,), start_new_session=True)
        os.close(read)
        server = Server(f"http://127.0.0.1:{port}", port, log, guard)
        with stop_signals_as_interrupt():
            try:
                _wait_ready(server, deadline_s, what)
                yield server
            finally:
                _stop(server, grace_s)
    finally:
        os.close(write)
        with contextlib.suppress(OSError):
            os.close(read)


def completions_args(server: Server, model_args: Mapping[str, Any]) -> dict[str, Any]:
    """lm-eval ``local-completions`` arguments for the model `model_args` names, served by `server`: token-id requests
    with the checkpoint's tokenizer, its context length vLLM's ``max_model_len``; with a LoRA adapter the requests name
    it (:data:`LORA_NAME`), the base's tokenizer encodes them."""
    pretrained = str(model_args["pretrained"])
    return {"model": LORA_NAME if model_args.get("lora_local_path") else pretrained, "base_url": f"{server.url}/v1/completions", "tokenizer": pretrained,
            "tokenizer_backend": "huggingface", "tokenized_requests": True,
            "max_length": int(model_args.get("max_model_len") or model_args.get("max_length") or 2048),
            "num_concurrent": 1, "max_retries": 3, "timeout": 600,
            **({"max_gen_toks": model_args["max_gen_toks"]} if "max_gen_toks" in model_args else {})}


def evaluate_served(spec: EvalSpec, output_path: Path, cache_path: Path | None, *, python: str | None = None,
                    log: Path | None = None, deadline_s: float = START_DEADLINE_S, parallel: int = 1) -> Path:
    """Evaluate `spec` (a ``vllm`` model: its model_args vLLM's) through a vLLM server started for it; see the module.

    Args:
        python: the interpreter the server runs under (default: this one, the vLLM environment's in a stage job).
        log: the server's log (default: :func:`server_log` beside `output_path`).
        parallel: lm-eval processes sending to the server at once (captrack.lmeval.served_groups).

    Returns:
        The results file written.

    Raises:
        ServerError: the server did not start (its log named).
    """
    from importlib.util import find_spec

    missing = [name for name in _CLIENT_NEEDS if find_spec(name) is None]
    if missing:  # before the server's minutes of start-up
        raise CaptrackError(f"lm-eval's {SERVED_MODEL} model needs {', '.join(missing)}, missing from {sys.executable}'s "
                            f"environment: pip install {' '.join(missing)} there (lm-eval's api extra)")
    from captrack.backends.adapters import ADAPTER_KEY, backend_model_args

    log = log or server_log(output_path.parent / f"{output_path.name}.vllm-server.log")
    port = free_port()
    engine_args = backend_model_args(spec.model, spec.model_args)  # an adapter: a LoRA module of the server
    command = vllm_server_command(python or sys.executable, engine_args, port)
    adapter = f" with LoRA adapter {spec.model_args[ADAPTER_KEY]}" if ADAPTER_KEY in spec.model_args else ""
    print(f"serving {spec.model_args['pretrained']}{adapter} with vLLM on 127.0.0.1:{port} (log: {log})", flush=True)
    started = time.monotonic()
    env = _server_env(os.environ)
    with serve(command, port, log, env=env, deadline_s=deadline_s, what="the vLLM server") as server:
        print(f"vLLM server ready after {time.monotonic() - started:.0f} s", flush=True)
        return evaluate_through(server, spec, output_path, cache_path, parallel=parallel, server_env=env,
                                engine_args=engine_args)


def evaluate_through(server: Server, spec: EvalSpec, output_path: Path, cache_path: Path | None, *, parallel: int = 1,
                     server_env: Mapping[str, str] | None = None, engine_args: Mapping[str, Any] | None = None) -> Path:
    """Evaluate vLLM `spec` against the running `server` with lm-eval's ``local-completions`` (in `parallel` processes,
    captrack.lmeval.served_groups), and record the run as an in-process vLLM run would be recorded, plus that it was
    served (captrack.lmeval.served_record; `server_env` the server's environment, default this process's;
    `engine_args` what the server was started with, default `spec`'s model_args: with an adapter, lora_local_path).

    Returns:
        The results file written.
    """
    from captrack.lmeval.evaluate import evaluate_checkpoint
    from captrack.lmeval.served_groups import evaluate_in_groups
    from captrack.lmeval.served_record import record_served, served_config

    served = replace(spec, model=SERVED_MODEL, model_args=completions_args(server, engine_args or spec.model_args))
    if parallel > 1:
        results = evaluate_in_groups(served, output_path, cache_path, parallel)
    else:
        results = evaluate_checkpoint(served, output_path, cache_path)
    record_served(results, served_config(spec.model_args, server.url, SERVED_MODEL,
                                         os.environ if server_env is None else server_env))
    return results
