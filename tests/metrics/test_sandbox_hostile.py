"""Hostile model-written programs, through the real code scorer: contained, scored 0 with a reason.

Every program answers a HumanEval-style item (``add(a, b)``) and computes the right answer only if its
attack worked, so an escape would show up as a pass. After each one, nothing outside the sandbox has
changed: the canary folder, the evaluator's venv, the processes on the machine, this process.
"""

from __future__ import annotations

import os
import resource
import socket
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from captrack.metrics.code import code_metrics, run_tests
from captrack.metrics.sandbox import HARNESS_MARKER, SandboxResult, bwrap_problem

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no bubblewrap sandbox: {bwrap_problem()}")

DOC = {
    "id": "hostile",
    "gold": "def check(candidate):\n    assert candidate(2, 3) == 5\n\ncheck(add)\n",
    "entry_point": "add",
    "code_prompt": "def add(a, b):\n",
}
WRONG = "def add(a, b):\n    return 0\n"


def _sandbox_processes() -> set[int]:
    """Processes running the sandbox harness (an argument is exactly HARNESS_MARKER) that are this test's: its
    descendants, or orphans (reparented away from whoever started them). Those under another live pytest process
    (a second pytest-xdist worker scoring its own programs) are that process's, not an escape from here."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and HARNESS_MARKER.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                if not _under_another_test_process(int(entry.name)):
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def _under_another_test_process(pid: int) -> bool:
    """Whether `pid`'s ancestry reaches another pytest process before this one (or the machine's init)."""
    while pid > 1:
        if pid == os.getpid():
            return False
        try:
            stat = (Path("/proc") / str(pid) / "stat").read_text()
            cmdline = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        except OSError:
            return False
        args = cmdline.split(b"\0")
        if any(a.endswith((b"/pytest", b"/py.test")) for a in args[:2]) or b"exec(eval(sys.stdin.readline()))" in args:
            return True  # a pytest process, or a pytest-xdist worker (a path holding "pytest-of-root" is not one)
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


@pytest.fixture
def canary(tmp_path: Path) -> Iterator[Path]:
    """A file outside the sandbox that no program may read, change, move, link or replace."""
    target = tmp_path / "canary.txt"
    target.write_text("untouched", encoding="utf-8")
    target.chmod(0o600)
    before = _sandbox_processes()
    yield target
    assert target.read_text(encoding="utf-8") == "untouched" and not target.is_symlink()
    assert target.stat().st_mode & 0o777 == 0o600 and target.stat().st_nlink == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["canary.txt"]
    assert _sandbox_processes() <= before, "a sandboxed process outlived the scorer"


def _score(program: str, timeout: float = 5) -> SandboxResult:
    result = run_tests(DOC, f"```python\n{program}\n```", timeout=timeout)
    assert not result.passed and result.detail, result
    assert result.sandbox == "bwrap"
    return result


def _attack(body: str) -> str:
    """A program whose `add` is right only when `body` (the attack) ran without an error."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return f"import os, sys\n\ndef add(a, b):\n{indented}\n    return a + b\n"


DIRECT = {
    "reads /etc/shadow": "open('/etc/shadow').read()",
    "reads the evaluator's project": f"open({str(Path(__file__).resolve())!r}).read()",
    "reads the evaluator's venv": f"open({str(Path(sysconfig.get_paths()['purelib']).parent.parent.parent / 'pyvenv.cfg')!r}).read()",
    "lists /work and /root": "assert os.listdir('/work') or os.listdir('/root')",
    "reads the evaluator's environment": "assert 'CAPTRACK_SHARED' in open('/proc/1/environ').read() or os.environ['HOME'] != '/tmp'",
    "runs a subprocess": "import subprocess\nsubprocess.run(['/usr/bin/id'], check=True)",
    "runs a shell": "assert os.system('true') == 0",
    "uses os.posix_spawn": "os.waitpid(os.posix_spawn('/usr/bin/true', ['true'], {}), 0)",
    "forks": "if os.fork() == 0:\n    os._exit(0)",
    "fork-bombs": "while True:\n    os.fork()",
    "forks through ctypes": "import ctypes\nassert ctypes.CDLL(None).syscall(57) >= 0",
    "reads a file through ctypes": "import ctypes\nassert ctypes.CDLL(None).open(b'/etc/shadow', 0) >= 0",
    "opens a socket": "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)",
    "resolves a host name": "import socket\nsocket.getaddrinfo('example.com', 80)",
    "starts a setsid daemon": (
        "pid = os.fork()\nif pid == 0:\n    os.setsid()\n    import time\n    time.sleep(30)\n    os._exit(0)"
    ),
    "escapes the namespaces": "import ctypes\nassert ctypes.CDLL(None).unshare(0x10000000) == 0",
    "removes the seccomp filter": (
        "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.prctl(22, 0, 0, 0, 0)\nassert os.fork() >= 0"
    ),
    "disables in-process guards, then forks": (
        "import gc\nfor o in gc.get_objects():\n    if isinstance(o, dict) and '_ALLOWED' in o:\n"
        "        o['_ALLOWED'] = ('/',)\nsys.addaudithook(lambda *a: None)\nassert os.fork() >= 0"
    ),
    "reads the tests from its folder": (
        "import glob\nassert any('check(' in open(f).read() for f in glob.glob('*') + glob.glob('/tmp/*'))"
    ),
    "fakes the harness report without the token": (
        "import json\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'{\"status\": \"passed\"}\\n')\n"
        "    except OSError:\n        pass\nos._exit(0)"
    ),
}


@pytest.mark.parametrize("attack", list(DIRECT), ids=list(DIRECT))
def test_direct_attempt_is_contained_and_scores_zero(attack: str, canary: Path) -> None:
    result = _score(_attack(DIRECT[attack]))
    assert result.status in ("failed", "exited")


def test_writes_outside_change_nothing(canary: Path) -> None:
    moves = [
        f"open({str(canary.parent / 'escaped.txt')!r}, 'w').write('x')",
        f"open({str(canary)!r}, 'w').write('changed')",
        f"os.rename({str(canary)!r}, {str(canary)!r} + '.moved')",
        f"os.chmod({str(canary)!r}, 0o777)",
        f"os.link({str(canary)!r}, {str(canary.parent / 'hard')!r})",
        f"os.remove({str(canary)!r})\n    os.symlink('/etc/passwd', {str(canary)!r})",
        f"os.truncate({str(canary)!r}, 0)",
    ]
    for move in moves:
        _score(_attack(move))


def test_a_pth_file_cannot_be_planted_in_the_evaluators_venv(canary: Path) -> None:
    planted = Path(sysconfig.get_paths()["purelib"]) / "captrack-sandbox-escape-test.pth"
    try:
        _score(_attack(f"open({str(planted)!r}, 'w').write('import os\\n')"))
        _score(_attack("import site\nopen(site.getsitepackages()[0] + '/x.pth', 'w').write('import os\\n')"))
        assert not planted.exists()
    finally:
        planted.unlink(missing_ok=True)


@pytest.mark.parametrize("signal_call", [
    "os.kill(os.getppid(), 9)",
    "os.kill(-1, 9)",
    "import signal\nsignal.pidfd_send_signal(os.pidfd_open(os.getppid()), 9)",
    f"os.kill({os.getpid()}, 9)",
], ids=["kill-parent", "kill-all", "pidfd-parent", "kill-evaluator-pid"])
def test_signals_to_the_evaluator_do_not_arrive(signal_call: str, canary: Path) -> None:
    result = _score(_attack(signal_call))
    assert result.status in ("failed", "exited")
    os.kill(os.getpid(), 0)  # this process is alive (a SIGKILL would have ended the test run)


@pytest.mark.parametrize("exit_call", [
    "sys.exit(0)", "raise SystemExit", "os._exit(0)", "import atexit\natexit.register(os._exit, 0)",
    "import builtins\nbuiltins.exec = lambda *a, **k: None",
    "sys.settrace(lambda *a: None)",
])
def test_early_exits_and_harness_tampering_with_a_wrong_solution_score_zero(exit_call: str, canary: Path) -> None:
    result = _score(f"import os, sys\n{WRONG}{exit_call}\n")
    assert result.status in ("failed", "exited"), result
    assert code_metrics(DOC, f"```python\nimport os, sys\n{WRONG}{exit_call}\n```") == {"pass_at_1": 0.0, "sandbox_isolated": 1.0}


def test_a_socket_to_a_listener_on_this_machine_never_connects(canary: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        _score(_attack(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)"))
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_a_flood_of_output_is_cut_off_and_the_evaluator_memory_stays_bounded(canary: Path) -> None:
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = _score(_attack("chunk = 'x' * (1 << 20)\nfor _ in range(1536):\n    sys.stderr.write(chunk)\n"
                            "    sys.stdout.write(chunk)"))
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert "output" in result.detail
    assert grown_kib < 100 * 1024, f"the evaluator grew by {grown_kib} KiB reading a 3 GB flood"


def test_a_memory_bomb_fails_without_taking_the_machine_down(canary: Path) -> None:
    result = _score(_attack("hog = []\nwhile True:\n    hog.append(bytearray(64 << 20))"))
    assert "MemoryError" in result.detail or result.status == "exited"


def test_an_endless_loop_is_killed_at_the_timeout(canary: Path) -> None:
    result = _score(_attack("while True:\n    pass"), timeout=2)
    assert result.status == "timeout"
