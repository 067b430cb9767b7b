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
import logging
import logging.handlers
import os
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
    """Sends each checkpoint to a syslog collector (UDP or TCP, RFC 3164 framing):
    ``audit-checkpoint {json}``. The collector's file is what ``--witness`` reads."""

    def __init__(self, host: str, port: int = 514, tcp: bool = False) -> None:
        import socket

        self.name = f"syslog {host}:{port}"
        self._handler = logging.handlers.SysLogHandler(
            (host, port),
            facility=logging.handlers.SysLogHandler.LOG_AUTHPRIV,
            socktype=socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM,
        )
        self._handler.append_nul = False

    def record(self, checkpoint: Checkpoint) -> None:
        line = SYSLOG_MARKER + checkpoint.line().decode().strip()
        entry = logging.LogRecord("audit", logging.INFO, __file__, 0, line, None, None)
        self._handler.emit(entry)

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
