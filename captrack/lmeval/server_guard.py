"""The guard of a served model: ``python server_guard.py LIFELINE_FD GRACE_S -- SERVER COMMAND...``.

Run as a script by :func:`captrack.lmeval.served.serve` (standard library only: it imports nothing of captrack), as
the leader of a process group of its own. It starts the server in that group and waits. When the server exits, the
guard exits with its status (a SIGTERM to the group ends the server, and so the guard). When the lifeline pipe (whose only writer is the process that started the guard) reaches
end of file, that process is gone however it ended (``kill -9`` included): the guard then stops the whole group,
SIGTERM first and SIGKILL after GRACE_S seconds, so that no server (nor its engine processes) outlives its job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time


def _stop(server: subprocess.Popen[bytes], grace_s: float) -> None:
    """Stop the guard's group: SIGTERM, the server given `grace_s` seconds to end, then SIGKILL to all left (the guard
    included)."""
    group = os.getpgrp()
    os.killpg(group, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.wait(timeout=grace_s)
    time.sleep(min(1.0, grace_s))  # its engine processes end with it
    os.killpg(group, signal.SIGKILL)


def _watch(fd: int, server: subprocess.Popen[bytes], grace_s: float) -> None:
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    _stop(server, grace_s)
    os._exit(1)


def main(argv: list[str]) -> int:
    """Start the server after ``--`` in `argv`; stop its group when the lifeline closes; return its exit status."""
    fd, grace_s, command = int(argv[0]), float(argv[1]), argv[argv.index("--") + 1:]
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the guard outlives a SIGTERM to its group: it ends with the server
    threading.Thread(target=_watch, args=(fd, server, grace_s), daemon=True).start()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
