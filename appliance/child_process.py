"""The servers the appliance starts itself (llama.cpp, the embedded graph server): a
child process on a free loopback port that stops with the appliance however it ends,
and exits that are described in words."""

from __future__ import annotations

import atexit
import ctypes
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

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


_launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="child-launcher")
"""The one thread children are forked from. Linux sends the parent-death signal when the
*thread* that forked the child ends (prctl(2)), so a child started from a request's,
a job's or the warm-up's thread would be stopped as soon as that thread is done; this
thread lives as long as the process."""


def launch(command: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen`` with ``die_with_parent``, forked from the launcher thread."""
    return _launcher.submit(
        lambda: subprocess.Popen(list(command), preexec_fn=die_with_parent, **options)
    ).result()


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


class ChildServer:
    """A server process the appliance owns: launched with ``die_with_parent`` and an exit
    handler, waited for until ``ready()`` says it serves, and described in words when it
    fails. Subclasses say what it is (``description``), how to launch it and when it is
    ready; ``failure`` is the error their callers catch."""

    description = "the server"
    failure: type[RuntimeError] = RuntimeError
    grace_s = 15.0

    def __init__(self, log_path: Path | None = None) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = log_path

    def _launch(
        self,
        command: Sequence[str],
        *,
        output: IO[bytes] | int,
        ready: Callable[[], bool],
        timeout_s: float,
        cwd: Path | None = None,
    ) -> None:
        """Start ``command`` and poll ``ready`` until it is true; an exit or the timeout
        raises ``failure`` naming the cause and the log."""
        self._process = launch(
            command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, cwd=cwd
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._process = None
                raise self.failure(
                    f"{self.description} exited with {how_it_ended(code)}{self._log_hint()}"
                )
            if ready():
                return
            time.sleep(0.2)
        self.stop()
        raise self.failure(
            f"{self.description} did not start within {timeout_s} s{self._log_hint()}"
        )

    def stop(self) -> None:
        process, self._process = self._process, None
        stop(process, grace_s=self.grace_s)

    def death(self) -> str | None:
        """How the server process ended, if it has: so that an error names the cause (a
        crash in its runtime) rather than only a dropped connection."""
        process = self._process
        if process is None or process.poll() is None:
            return None
        return f"{self.description} died ({how_it_ended(process.returncode)}){self._log_hint()}"

    def _log_hint(self) -> str:
        return f"; its log is {self._log_path}" if self._log_path else ""

    @property
    def process_id(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None
