"""The embedded graph server: ArcadeDB from its Python wheel, run by the appliance as a
child process that speaks Bolt, so that the one Cypher store implementation talks to it
exactly as it talks to Neo4j in production.

The wheel brings its own Java runtime (its jars need Java 25). Every listener is bound
to loopback (Bolt's own default is every interface), the root password is made once
and kept in the data directory (mode 0600), and the process stops with the appliance.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

from appliance.child_process import ChildServer, free_port

log = logging.getLogger(__name__)

DATABASE = "appliance"
USER = "root"
_STARTED = b"ArcadeDB Server started"
_JAVA_OPTIONS = (
    "--add-modules=jdk.incubator.vector",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF8",
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
    "--add-opens=java.base/java.nio.channels.spi=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "-Dpolyglot.engine.WarnInterpreterOnly=false",
)


class GraphServerFailed(RuntimeError):
    """The embedded graph server could not be started or stopped unexpectedly."""


def arcadedb_home() -> Path:
    """Where the wheel keeps its Java runtime and jars."""
    try:
        import arcadedb_embedded
    except ImportError as error:
        raise GraphServerFailed(
            "graph.engine = 'arcadedb' needs the arcadedb-embedded wheel "
            "(`make install`), or set graph.engine to 'neo4j' or 'none'"
        ) from error
    return Path(arcadedb_embedded.__file__).parent


class ArcadeDbServer(ChildServer):
    """One ArcadeDB server holding the database ``appliance`` under ``directory``."""

    description = "the embedded graph server"
    failure = GraphServerFailed
    grace_s = 30.0

    def __init__(self, directory: Path, *, heap_mb: int = 384, start_timeout_s: float = 60.0):
        super().__init__(directory / "server.log")
        self.directory = directory
        self._heap_mb = heap_mb
        self._start_timeout_s = start_timeout_s
        self.port = 0

    @property
    def url(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        assert self._log_path is not None  # always given: the server's own log
        return self._log_path

    def password(self) -> str:
        """The root password: made on first use, then read from the data directory."""
        path = self.directory / "root-password"
        if not path.exists():
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.touch(mode=0o600)
            path.write_text(secrets.token_urlsafe(24) + "\n", encoding="utf-8")
        return path.read_text(encoding="utf-8").strip()

    def start(self) -> ArcadeDbServer:
        """Start the server and wait until it has opened the database (Bolt listens a
        moment before that, so an open port is not the sign)."""
        if self._process is not None:
            return self
        home = arcadedb_home()
        password = self.password()
        self.port = free_port()
        http_port = free_port()
        command = [
            str(home / "jre" / "bin" / "java"),
            f"-Xms{min(self._heap_mb, 256)}m",
            f"-Xmx{self._heap_mb}m",
            *_JAVA_OPTIONS,
            f"-XX:ErrorFile={self.directory / 'hs_err_pid%p.log'}",
            "-cp", str(home / "jars" / "*"),
            f"-Darcadedb.server.rootPath={self.directory}",
            f"-Darcadedb.server.databaseDirectory={self.directory / 'databases'}",
            f"-Darcadedb.server.rootPassword={password}",
            "-Darcadedb.server.mode=production",
            "-Darcadedb.server.httpIncomingHost=127.0.0.1",
            f"-Darcadedb.server.httpIncomingPort={http_port}",
            "-Darcadedb.bolt.host=127.0.0.1",
            f"-Darcadedb.bolt.port={self.port}",
            "-Darcadedb.server.plugins=Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            f"-Darcadedb.server.defaultDatabases={DATABASE}[{USER}]",
            "com.arcadedb.server.ArcadeDBServer",
        ]  # fmt: skip
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0

        def opened_the_database() -> bool:
            with self.log_path.open("rb") as server_log:
                server_log.seek(offset)
                return _STARTED in server_log.read()

        log.info("starting the embedded graph server (ArcadeDB) on port %d", self.port)
        with self.log_path.open("ab") as output:
            self._launch(
                command, output=output, ready=opened_the_database,
                timeout_s=self._start_timeout_s, cwd=self.directory,
            )  # fmt: skip
        return self
