"""The knowledge graph contract on Neo4j 5.26 Community, the production graph server:
``scripts/servers/neo4j.sh run`` starts one for the suite (``make test`` does). No
server is a failure, never a skip."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from neo4j import Driver, GraphDatabase

from tests.contract.graph_suite import GraphStoreContract

NEO4J_URL = os.environ.get("APPLIANCE_TEST_NEO4J_URL", "bolt://127.0.0.1:7687")
PASSWORD_FILE = os.environ.get("APPLIANCE_TEST_NEO4J_PASSWORD_FILE")


class TestNeo4j(GraphStoreContract):
    @pytest.fixture
    def driver(self) -> Iterator[Driver]:
        if not PASSWORD_FILE:
            pytest.fail(
                "no Neo4j server for the suite: run it under scripts/servers/neo4j.sh run "
                "(make test does), which sets APPLIANCE_TEST_NEO4J_PASSWORD_FILE"
            )
        password = Path(PASSWORD_FILE).read_text(encoding="utf-8").strip()
        driver = GraphDatabase.driver(NEO4J_URL, auth=("neo4j", password))
        driver.verify_connectivity()
        yield driver
        driver.close()

    @pytest.fixture
    def database(self) -> str:
        return "neo4j"
