"""The served model's lifecycle (captrack.lmeval.served.serve) on a stand-in server: a tiny http.server answering /health.

Started, health-checked, stopped with every process it started (no listening port left); stopped on an exception and
on SIGTERM to the job; stopped by its guard when the job is killed with SIGKILL; one error line naming the log when the
server exits early or never becomes healthy.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from captrack.lmeval.served import ServerError, free_port, serve, vllm_server_command

STAND_IN = textwrap.dedent("""\
    import http.server, os, subprocess, sys, time
    port, delay = int(sys.argv[1]), float(sys.argv[2])
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # an engine process of its own
    print("engine pid", child.pid, flush=True)
    time.sleep(delay)
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def log_message(self, *args):
            pass
    http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
""")


def _stand_in(tmp_path: Path, delay: float = 0.0) -> tuple[list[str], int]:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    port = free_port()
    return [sys.executable, str(script), str(port), str(delay)], port


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _group_gone(group: int) -> bool:
    """No process of `group` runs (a zombie that no one has reaped yet does not run)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return False
    return True


def _engine_pid(log: Path) -> int:
    return int(next(line for line in log.read_text().splitlines() if line.startswith("engine pid")).split()[-1])


def _gone(pid: int) -> bool:
    from captrack.processes import process_gone

    return process_gone(pid)


def test_the_server_is_ready_inside_and_gone_with_its_processes_after(tmp_path: Path) -> None:
    command, port = _stand_in(tmp_path)
    log = tmp_path / "logs" / "job.server.log"
    with serve(command, port, log, deadline_s=60, grace_s=5) as server:
        with urllib.request.urlopen(f"{server.url}/health", timeout=5) as reply:
            assert reply.status == 200
        group, engine = server.process.pid, _engine_pid(log)
    assert server.process.returncode is not None and _group_gone(group) and _gone(engine)
    assert not _listening(port)


def test_an_exception_inside_stops_the_server(tmp_path: Path) -> None:
    command, port = _stand_in(tmp_path)
    with pytest.raises(RuntimeError, match="evaluation failed"), serve(command, port, tmp_path / "s.log", deadline_s=60,
                                                                         grace_s=5) as server:
        group = server.process.pid
        raise RuntimeError("evaluation failed")
    assert _group_gone(group) and not _listening(port)


def test_a_server_that_exits_early_is_one_line_naming_its_log(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    command = [sys.executable, "-c", "import sys; print('no such model: /nowhere'); sys.exit(3)"]
    with pytest.raises(ServerError) as caught, serve(command, free_port(), log, deadline_s=60, grace_s=5):
        pytest.fail("the block ran without a server")
    message = str(caught.value)
    assert "\n" not in message and "exited with status 3" in message and str(log) in message, message
    assert "no such model: /nowhere" in message


def test_a_server_never_healthy_is_stopped_at_the_deadline(tmp_path: Path) -> None:
    command, port = _stand_in(tmp_path, delay=600)
    log = tmp_path / "s.log"
    # 6 s: the stand-in (two interpreter starts) must have logged its engine's PID before the deadline, loaded or not
    with pytest.raises(ServerError) as caught, serve(command, port, log, deadline_s=6, grace_s=2):
        pytest.fail("the block ran without a server")
    message = str(caught.value)
    assert "\n" not in message and "within 6 s" in message and str(log) in message, message
    engine = _engine_pid(log)
    deadline = time.monotonic() + 10
    while not _gone(engine) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(engine)


JOB = textwrap.dedent("""\
    import signal, sys, time
    from pathlib import Path
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job inherits SIGINT ignored
    from captrack.lmeval.served import serve
    command, port, log = sys.argv[3:], int(sys.argv[1]), Path(sys.argv[2])
    with serve(command, port, log, deadline_s=60, grace_s=5) as server:
        print("ready", server.process.pid, flush=True)
        time.sleep(600)
""")


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_job_ended_by_a_signal_leaves_no_server(tmp_path: Path, how: signal.Signals) -> None:
    """SIGTERM / Ctrl-C: the job stops the server as it leaves; SIGKILL: the guard sees the job gone and stops it."""
    command, port = _stand_in(tmp_path)
    log = tmp_path / "s.log"
    job = subprocess.Popen([sys.executable, "-c", JOB, str(port), str(log), *command], stdout=subprocess.PIPE,
                           text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    try:
        assert job.stdout is not None
        ready = job.stdout.readline().split()
        assert ready[:1] == ["ready"], ready
        group, engine = int(ready[1]), _engine_pid(log)
        job.send_signal(how)
        job.wait(timeout=120)  # a loaded 2-core machine: the server stops within the grace, the job may wait for a core
        deadline = time.monotonic() + 20
        while not (_group_gone(group) and _gone(engine)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group_gone(group) and _gone(engine) and not _listening(port)
    finally:
        job.kill()
        job.wait()


def test_vllm_server_command_passes_the_engine_arguments_as_flags() -> None:
    command = vllm_server_command("/venv/bin/python", {"pretrained": "/m", "dtype": "float32", "max_model_len": 512,
                                                       "enforce_eager": True, "trust_remote_code": False,
                                                       "max_gen_toks": 32}, 8123)
    assert command[:4] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model"]
    assert command[4:9] == ["/m", "--host", "127.0.0.1", "--port", "8123"]
    rest = command[9:]
    assert rest == ["--disable-uvicorn-access-log", "--dtype", "float32", "--max-model-len", "512", "--enforce-eager"]



def test_a_served_adapter_is_a_lora_module_the_client_names(tmp_path: Path) -> None:
    """A checkpoint given as base + LoRA adapter starts the server with LoRA on and the adapter under its own name, at
    the rank vLLM takes; lm-eval's client asks for that name and encodes with the base's tokenizer."""
    from captrack.backends.adapters import backend_model_args
    from captrack.lmeval.served import LORA_NAME, Server, completions_args

    adapter = tmp_path / "lora"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 4, "base_model_name_or_path": "/m"}')
    engine = backend_model_args("vllm", {"pretrained": "/m", "dtype": "float32", "adapter": str(adapter)})
    command = vllm_server_command("/venv/bin/python", engine, 8123)
    assert command[command.index("--enable-lora") + 1:command.index("--enable-lora") + 3] == \
        ["--lora-modules", f"{LORA_NAME}={adapter}"]
    assert command[command.index("--max-lora-rank") + 1] == "8"  # rank 4 rounded up to one vLLM takes
    assert "--adapter" not in command and "--lora-local-path" not in command
    client = completions_args(Server("http://127.0.0.1:8123", 8123, tmp_path / "log", None), engine)  # type: ignore[arg-type]
    assert client["model"] == LORA_NAME and client["tokenizer"] == "/m"
    plain = completions_args(Server("http://127.0.0.1:8123", 8123, tmp_path / "log", None), {"pretrained": "/m"})  # type: ignore[arg-type]
    assert plain["model"] == "/m"


def test_the_server_log_lies_beside_the_job_s_log(tmp_path: Path) -> None:
    """A job whose output goes to logs/<stage>.log (as the executors start it) gets logs/<stage>.vllm-server.log; a job
    writing to a terminal or a pipe, the place it is given."""
    job_log = tmp_path / "logs" / "eval-b-0.log"
    job_log.parent.mkdir()
    code = "from pathlib import Path; from captrack.lmeval.served import server_log; print(server_log(Path('/else.log')))"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with open(job_log, "w") as sink:
        subprocess.run([sys.executable, "-c", code], stdout=sink, env=env, check=True, timeout=60)
    assert job_log.read_text().strip() == str(tmp_path / "logs" / "eval-b-0.vllm-server.log")
    piped = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=60)
    assert piped.stdout.strip() == "/else.log"
