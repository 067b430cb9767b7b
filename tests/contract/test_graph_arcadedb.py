"""The knowledge graph contract on the embedded graph server: ArcadeDB started by the
appliance as a child process, spoken to over Bolt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase

from appliance.index.arcadedb_server import DATABASE, USER, ArcadeDbServer
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
