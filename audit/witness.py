"""Witnesses: every signed checkpoint also leaves the appliance as it is made.

The log and its checkpoints live on one disk. Whoever can write that disk can cut the
end off both files, and the shortened log still verifies: nothing inside it says that
more entries once existed. A witness keeps a copy of each checkpoint where that person
cannot reach: a directory on another mount (an NFS share with write-once retention, a
second host), or the site's syslog collector. ``audit verify --witness`` then checks the
log against every checkpoint the witness saw: a log shorter than a witnessed checkpoint,
or one whose first entries no longer hash to its root, is reported.

What a witness cannot see are the entries written after the last checkpoint it
received: at most ``checkpoint_every`` entries or ``checkpoint_seconds`` of them (the log
signs a checkpoint at least that often while entries arrive). The compliance page and
``audit verify`` report that gap.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Protocol

from audit.checkpoints import Checkpoint

WITNESS_FILE = "checkpoints.witness"
SYSLOG_MARKER = "audit-checkpoint "


class Witness(Protocol):
    name: str

    def record(self, checkpoint: Checkpoint) -> None:
        """Send one checkpoint; raises OSError when it could not be sent."""
        ...

    def read_back(self) -> list[Checkpoint]:
        """What the witness holds, where the appliance can read it (else empty)."""
        ...


class DirectoryWitness:
    """Appends each checkpoint to ``checkpoints.witness`` in a directory that should sit
    on another mount (or another machine's share), with fsync."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / WITNESS_FILE
        self.name = f"directory {directory}"

    def record(self, checkpoint: Checkpoint) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, checkpoint.line())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def read_back(self) -> list[Checkpoint]:
        return read_witnessed(self.path) if self.path.exists() else []


class SyslogWitness:
    """Sends each checkpoint to a syslog collector, facility authpriv, severity info:
    ``<86>audit-checkpoint {json}`` (UDP datagrams, or TCP with one message per line).
    Any failure to send raises, so the log reports the witness failing (the standard
    library's handler would only print it)."""

    PRIORITY = 10 * 8 + 6  # authpriv.info

    def __init__(self, host: str, port: int = 514, tcp: bool = False) -> None:
        self.name = f"syslog {host}:{port}"
        self._address = (host, port)
        self._tcp = tcp
        self._connection: socket.socket | None = None

    def record(self, checkpoint: Checkpoint) -> None:
        message = f"<{self.PRIORITY}>{SYSLOG_MARKER}{checkpoint.line().decode().strip()}"
        if not self._tcp:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.sendto(message.encode(), self._address)
            return
        try:
            if self._connection is None:  # connected on first use, and again after a failure
                self._connection = socket.create_connection(self._address, timeout=5)
            self._connection.sendall(message.encode() + b"\n")
        except OSError:
            if self._connection is not None:
                self._connection.close()
            self._connection = None
            raise

    def read_back(self) -> list[Checkpoint]:
        return []  # the collector's file is read where it is, by ``audit verify --witness``


def read_witnessed(path: Path) -> list[Checkpoint]:
    """The checkpoints a witness holds: a witness directory, its file, or a collector's
    log file in which checkpoint lines appear after ``audit-checkpoint``. Lines that are
    not checkpoints are skipped (a syslog file holds other messages too)."""
    if path.is_dir():
        path = path / WITNESS_FILE
    checkpoints = []
    for line in path.read_bytes().splitlines():
        text = line.decode("utf-8", "replace")
        start = text.find(SYSLOG_MARKER)
        payload = (text[start + len(SYSLOG_MARKER) :] if start >= 0 else text).strip("\x00 \r")
        try:
            fields = json.loads(payload)
            checkpoints.append(Checkpoint(**fields))
        except (ValueError, TypeError):
            continue
    return checkpoints
