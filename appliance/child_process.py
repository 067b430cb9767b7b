"""The servers the appliance starts itself (llama.cpp, the embedded graph server): a
child process on a free loopback port that stops with the appliance however it ends,
and exits that are described in words."""

from __future__ import annotations

import ctypes
import signal
import socket
import subprocess
from typing import Any

PR_SET_PDEATHSIG = 1

_prctl: Any
try:  # resolved here, so that the child between fork and exec only makes one C call
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: stop() and atexit still apply
    _prctl = None


def die_with_parent() -> None:
    """In the child, before exec: ask Linux to stop the server when the appliance process
    dies, however it dies (a killed process runs no exit handlers)."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[bytes] | None, grace_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if the process has not ended within ``grace_s``."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def how_it_ended(code: int) -> str:
    """An exit status in words: ``status 1`` or ``signal SIGSEGV``."""
    if code >= 0:
        return f"status {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"
