"""DeepSpeed's CPU all-reduce leaves a 67 MB /dev/shm buffer per rank behind; captrack-ds removes its own at exit.

The real launches are checked in tests/backends/test_deepspeed_parity.py (slow); here the name and
the removal, in a process of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from captrack.backends.launch import cpu_allreduce_buffer

pytestmark = pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm (not Linux)")


def test_the_name_is_deepspeeds() -> None:
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511", "RANK": "3"}
    assert cpu_allreduce_buffer(env) == Path(f"/dev/shm/deepspeed_allreduce_buffer_{os.getuid()}_127.0.0.1_29511_3")


def test_the_buffer_of_this_rank_is_removed_when_the_process_exits() -> None:
    env = os.environ | {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": f"captrack-test-{os.getpid()}", "RANK": "1"}
    code = ("from captrack.backends.launch import cpu_allreduce_buffer, remove_cpu_allreduce_buffer_at_exit\n"
            "path = cpu_allreduce_buffer()\npath.write_bytes(b'workspace')\nremove_cpu_allreduce_buffer_at_exit()\n"
            "print(path, path.exists())")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    path, existed = done.stdout.split()
    assert existed == "True" and not Path(path).exists()
