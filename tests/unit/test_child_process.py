"""The servers the appliance starts itself share one launcher: a real child process is
waited for until it serves, an exit or a hang is an error naming the cause and the log,
a death is described in words, and stopping it leaves nothing running."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from appliance.child_process import ChildServer, free_port


class Failed(RuntimeError):
    pass


class HttpServer(ChildServer):
    description = "the test server"
    failure = Failed
    grace_s = 5.0

    def start(self, script: str, timeout_s: float = 20.0) -> HttpServer:
        port = free_port()
        assert self._log_path is not None
        with self._log_path.open("ab") as output:
            self._launch(
                [sys.executable, "-c", script.format(port=port)], output=output,
                ready=lambda: _answers(port), timeout_s=timeout_s,
            )  # fmt: skip
        self.port = port
        return self


SERVE = (
    "import http.server; http.server.HTTPServer(('127.0.0.1', {port}),"
    " http.server.SimpleHTTPRequestHandler).serve_forever()"
)


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_server_is_waited_for_and_stopped(tmp_path: Path) -> None:
    server = HttpServer(tmp_path / "server.log").start(SERVE)
    assert server.running and server.process_id and server.death() is None
    assert _answers(server.port)
    server.stop()
    assert not server.running and not _answers(server.port)
    server.stop()  # twice is harmless


def test_an_exit_before_serving_names_its_status_and_log(tmp_path: Path) -> None:
    server = HttpServer(tmp_path / "server.log")
    with pytest.raises(
        Failed, match=r"the test server exited with status 3; its log is .*server.log"
    ):
        server.start("import sys; print('bad settings'); sys.exit(3)")
    assert "bad settings" in (tmp_path / "server.log").read_text()
    assert not server.running


def test_a_server_that_never_serves_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    server = HttpServer(tmp_path / "server.log")
    with pytest.raises(Failed, match=r"did not start within 1.0 s"):
        server.start("import time; time.sleep(60)", timeout_s=1.0)
    assert not server.running


def test_a_death_is_described_by_its_signal(tmp_path: Path) -> None:
    server = HttpServer(tmp_path / "server.log").start(SERVE)
    assert server._process is not None
    server._process.send_signal(signal.SIGKILL)
    server._process.wait()
    assert (
        server.death()
        == f"the test server died (signal SIGKILL); its log is {tmp_path / 'server.log'}"
    )
    server.stop()


def test_a_child_started_from_a_thread_outlives_the_thread_but_not_the_process(
    tmp_path: Path,
) -> None:
    """Linux sends the parent-death signal when the thread that forked ends: children are
    forked from the launcher's own thread, so a job's or a request's thread may start
    them, and they still stop when the appliance process dies."""
    started: list[HttpServer] = []
    worker = threading.Thread(
        target=lambda: started.append(HttpServer(tmp_path / "server.log").start(SERVE))
    )
    worker.start()
    worker.join()
    (server,) = started
    try:
        time.sleep(0.5)
        assert server.running and _answers(server.port)
    finally:
        server.stop()

    # A parent process that starts a child from a thread, then is killed: the child goes.
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, threading, time\n"
         "from appliance.child_process import launch\n"
         "def start():\n"
         "    print(launch(['sleep', '60']).pid, flush=True)\n"
         "t = threading.Thread(target=start); t.start(); t.join()\n"
         "time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    for _ in range(50):
        try:
            if "State:\tZ" in Path(f"/proc/{child}/status").read_text():
                break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the child outlived the killed parent")
