"""The embedded graph server: ArcadeDB from its Python wheel, run by the appliance as a
child process that speaks Bolt, so that the one Cypher store implementation talks to it
exactly as it talks to Neo4j in production.

The wheel brings its own Java runtime (its jars need Java 25). Every listener is bound
to loopback (Bolt's own default is every interface), the root password is made once
and kept in the data directory (mode 0600), and the process stops with the appliance.

ArcadeDB locks its database: one server per data directory. A server whose appliance
has just died is still closing it (it was sent SIGTERM), so a restart waits for that one
to end; a server that a running appliance holds is named in the error at once.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from pathlib import Path

from appliance.child_process import ChildServer, free_port

log = logging.getLogger(__name__)

DATABASE = "appliance"
USER = "root"
_STARTED = b"ArcadeDB Server started"
_LOCKED = b"is locked by another process"
_PID_FILE = "server.pid"
"""The server's process id and that of the appliance process that started it."""
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
        log.info("starting the embedded graph server (ArcadeDB) on port %d", self.port)
        try:
            self._launch_logged(command, offset)
        except GraphServerFailed:
            if not self._log_says(_LOCKED, offset):
                raise
            holder = self._holder()
            if holder is None or holder.appliance_alive:
                raise GraphServerFailed(self._locked_message(holder)) from None
            log.info("the graph server of an appliance that ended (pid %d) is still "
                     "closing the database; waiting for it", holder.pid)  # fmt: skip
            if not holder.ended_within(self.grace_s):
                raise GraphServerFailed(self._locked_message(holder)) from None
            offset = self.log_path.stat().st_size
            self._launch_logged(command, offset)
        (self.directory / _PID_FILE).write_text(
            f"{self.process_id} {os.getpid()}\n", encoding="utf-8"
        )
        return self

    def _launch_logged(self, command: list[str], offset: int) -> None:
        """Launch and wait until the server has opened the database (Bolt listens a
        moment before that, so an open port is not the sign)."""
        with self.log_path.open("ab") as output:
            self._launch(
                command, output=output, ready=lambda: self._log_says(_STARTED, offset),
                timeout_s=self._start_timeout_s, cwd=self.directory,
            )  # fmt: skip

    def _log_says(self, words: bytes, offset: int) -> bool:
        """Whether the server's log, past ``offset``, contains ``words``."""
        with self.log_path.open("rb") as server_log:
            server_log.seek(offset)
            return words in server_log.read()

    def _holder(self) -> _Holder | None:
        """The graph server recorded as last started on this directory, if it runs."""
        try:
            server, appliance = map(int, (self.directory / _PID_FILE).read_text().split())
        except (OSError, ValueError):
            return None
        return _Holder.of(server, appliance, self.directory)

    def _locked_message(self, holder: _Holder | None) -> str:
        where = self.directory / "databases" / DATABASE
        if holder is None:
            return (
                f"the graph database {where} is locked by another process; stop whatever "
                f"has it open, then start again (the server's log is {self.log_path})"
            )
        return (
            f"the graph database {where} is held by its graph server (pid {holder.pid}) "
            f"of the appliance process {holder.appliance}: only one appliance process may "
            "run on a data directory with the embedded graph; the operator's ingest, "
            "docs remove and search go through the running web service"
        )


class _Holder:
    """A running ArcadeDB server process, read from ``/proc``, and the appliance process
    that started it."""

    def __init__(self, pid: int, parent: int, appliance: int, directory: Path) -> None:
        self.pid = pid
        self.parent = parent
        self.appliance = appliance
        self.directory = directory

    @classmethod
    def of(cls, pid: int, appliance: int, directory: Path) -> _Holder | None:
        """The server ``pid``, if it runs and serves ``directory``."""
        proc = Path("/proc") / str(pid)
        try:
            command = (proc / "cmdline").read_bytes()
            status = (proc / "status").read_text(encoding="utf-8")
        except OSError:
            return None
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        serves = f"-Darcadedb.server.rootPath={directory}\0".encode()
        if serves not in command or fields["State"].startswith("Z"):
            return None
        return cls(pid, int(fields["PPid"].strip()), appliance, directory)

    @property
    def appliance_alive(self) -> bool:
        """Whether the appliance that started it is still its parent (when that one
        dies, the server is sent SIGTERM, is handed to another parent, and closes)."""
        return self.parent == self.appliance

    def ended_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if _Holder.of(self.pid, self.appliance, self.directory) is None:
                return True
            time.sleep(0.2)
        return False
