"""The knowledge graph contract on the embedded graph server: ArcadeDB started by the
appliance as a child process, spoken to over Bolt."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase

from appliance.index.arcadedb_server import DATABASE, USER, ArcadeDbServer, GraphServerFailed
from tests.contract.graph_suite import GraphStoreContract


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArcadeDbServer]:
    server = ArcadeDbServer(Path(tmp_path_factory.mktemp("arcadedb")), heap_mb=256).start()
    yield server
    server.stop()


class TestArcadeDb(GraphStoreContract):
    @pytest.fixture
    def driver(self, server: ArcadeDbServer) -> Iterator[Driver]:
        driver = GraphDatabase.driver(server.url, auth=(USER, server.password()))
        yield driver
        driver.close()

    @pytest.fixture
    def database(self) -> str:
        return DATABASE


def test_the_embedded_server_listens_on_loopback_only(server: ArcadeDbServer) -> None:
    import psutil

    assert server.process_id is not None
    listening = {
        c.laddr.ip
        for c in psutil.Process(server.process_id).net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN
    }
    assert listening and listening <= {"127.0.0.1", "::ffff:127.0.0.1"}
    assert (server.directory / "root-password").stat().st_mode & 0o077 == 0
    # ArcadeDB also loads its MCP plugin (an endpoint for LLM agents on the HTTP
    # listener): it must stay off, as the wheel's default configuration has it.
    mcp = json.loads((server.directory / "config" / "mcp-config.json").read_text())
    assert mcp["enabled"] is False


def test_a_second_server_on_the_same_directory_names_the_one_that_holds_it(
    server: ArcadeDbServer,
) -> None:
    second = ArcadeDbServer(server.directory, heap_mb=256)
    with pytest.raises(GraphServerFailed, match="held by its graph server") as failure:
        second.start()
    assert f"pid {server.process_id}" in str(failure.value)
    assert f"appliance process {os.getpid()}" in str(failure.value)
    assert not second.running and server.running


def test_a_restart_after_the_appliance_was_killed_waits_for_its_server_to_close(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The killed appliance's server is sent SIGTERM and closes the database; the next
    appliance on the directory starts once it has, with what the first one wrote. The
    old server is held stopped (SIGSTOP) through the kill, and let go on only once the
    new one says it waits for it, so that it is certainly still closing then."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "written"
    old_server = int((tmp_path / "server.pid").read_text().split()[0])
    os.kill(old_server, signal.SIGSTOP)
    holder.kill()
    holder.wait()
    waiting = ResumeWhenWaitedFor(old_server)
    logging.getLogger("appliance.index.arcadedb_server").addHandler(waiting)
    try:
        with caplog.at_level(logging.INFO, logger="appliance.index.arcadedb_server"):
            server = ArcadeDbServer(tmp_path, heap_mb=256).start()
    finally:
        logging.getLogger("appliance.index.arcadedb_server").removeHandler(waiting)
        with contextlib.suppress(ProcessLookupError):  # whatever happened, it may end
            os.kill(old_server, signal.SIGCONT)
    try:
        assert waiting.resumed
        with GraphDatabase.driver(server.url, auth=(USER, server.password())) as driver:
            records, _, _ = driver.execute_query(
                "MATCH (n:Probe) RETURN n.name AS name", database_=DATABASE
            )
        assert [r["name"] for r in records] == ["written before the kill"]
    finally:
        server.stop()


class ResumeWhenWaitedFor(logging.Handler):
    """Lets the stopped server go on when the new one logs that it waits for it."""

    def __init__(self, pid: int) -> None:
        super().__init__(logging.INFO)
        self.pid = pid
        self.resumed = False

    def emit(self, record: logging.LogRecord) -> None:
        if "still closing the database" in record.getMessage():
            self.resumed = True
            os.kill(self.pid, signal.SIGCONT)


HOLDER = """
import sys, time
from pathlib import Path
from neo4j import GraphDatabase
from appliance.index.arcadedb_server import DATABASE, USER, ArcadeDbServer
server = ArcadeDbServer(Path(sys.argv[1]), heap_mb=256).start()
with GraphDatabase.driver(server.url, auth=(USER, server.password())) as driver:
    driver.execute_query("CREATE (:Probe {name: 'written before the kill'})", database_=DATABASE)
print("written", flush=True)
time.sleep(600)
"""
