"""Ingestion's reading and computing in a process of its own: the document reader.

On the embedded stores the web service is the one process that may write them, and
questions and documents take turns through its engine lock. Preparing a document
(``ingest.preparation``: parse, chunk, embed, parse graphs, facts) is nearly all of
ingestion's time and needs no store, so the service runs it here, in a child process
with its own models and its own interpreter lock, at a lower CPU priority, and takes
the engines only to write what comes back: a question waits for a document's writes,
never for its reading. A parser that crashes the child (a hostile PDF) fails that
document, not the service; the next document starts a new child.

The child is ``python -m appliance.document_reader``, spoken to over its
standard input and output with ``multiprocessing.connection`` framing (the settings
first, then one request at a time). Not a ``multiprocessing`` start: that would run the
parent's main script again in the child.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from pathlib import Path

from appliance.child_process import launch, stop
from appliance.engines import Appliance
from appliance.ingest.preparation import DocumentOutcome, ReadyBatch
from appliance.settings import Settings

log = logging.getLogger(__name__)

Prepared = list[ReadyBatch | DocumentOutcome]
"""A preparer's batches and its outcomes in the order it gave them (``Ingestor.write``)."""

NICENESS = 10
"""The reader's CPU priority below the service's: on a busy machine, questions first."""
STOP_GRACE_S = 5.0
CRASHED = "the document reader stopped while reading this file; it was not ingested"


class PreparationStopped(RuntimeError):
    """The process was closed (the service stops) before the files were prepared."""


class PreparationFailed(RuntimeError):
    """The preparer raised; the message is its traceback, for the log."""


class PreparationProcess:
    """A child process that prepares documents for the caller to write. Started on first
    use (its models load there, once: the first document waits for them); ``close``
    ends it without waiting for the document it reads (nothing of it was written)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._child: subprocess.Popen[bytes] | None = None
        self._requests: Connection | None = None
        self._replies: Connection | None = None
        self._turn = threading.Lock()
        """One request at a time through the pipes."""
        self._closed = threading.Event()

    def prepare(self, paths: Sequence[Path], defaults: Mapping[str, object]) -> Prepared:
        """The preparer's batches and outcomes for ``paths``: every path a failed outcome
        when the child died while preparing them."""
        with self._turn:
            if self._closed.is_set():
                raise PreparationStopped("the service is stopping")
            requests, replies = self._started()
            try:
                requests.send((list(paths), dict(defaults)))
                kind, body = replies.recv()
            except (EOFError, OSError):
                self._end_child()
                if self._closed.is_set():
                    raise PreparationStopped("the service is stopping") from None
                log.error(
                    "the document reader stopped while reading %s", ", ".join(map(str, paths))
                )
                return [DocumentOutcome(Path(p), "failed", error=CRASHED) for p in paths]
        if kind == "failed":
            raise PreparationFailed(body)
        prepared: Prepared = body
        return prepared

    def close(self) -> None:
        """Ends the child now; a ``prepare`` waiting on it raises ``PreparationStopped``."""
        self._closed.set()
        stop(self._child, STOP_GRACE_S)  # a waiting prepare reads the end of the pipe
        with self._turn:
            self._end_child()

    @property
    def process_id(self) -> int | None:
        child = self._child
        return child.pid if child is not None and child.poll() is None else None

    def _started(self) -> tuple[Connection, Connection]:
        if self._child is None or self._child.poll() is not None:
            self._end_child()
            child = launch(
                [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            assert child.stdin is not None and child.stdout is not None
            self._requests = Connection(os.dup(child.stdin.fileno()), readable=False)
            self._replies = Connection(os.dup(child.stdout.fileno()), writable=False)
            child.stdin.close()
            child.stdout.close()
            self._child = child
            self._requests.send(self._settings)
        assert self._requests is not None and self._replies is not None
        return self._requests, self._replies

    def _end_child(self) -> None:
        child, requests, replies = self._child, self._requests, self._replies
        self._child, self._requests, self._replies = None, None, None
        stop(child, STOP_GRACE_S)
        for connection in (requests, replies):
            if connection is not None:
                connection.close()


def _serve() -> None:
    """The child: the settings, then one request at a time until the parent goes."""
    replies = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # what a library prints goes to the log, not into the replies
    requests = Connection(os.dup(0), writable=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service decides when it stops
    os.nice(NICENESS)
    settings: Settings = requests.recv()
    preparer = Appliance(settings).preparer
    while True:
        try:
            paths, defaults = requests.recv()
        except EOFError:
            return
        try:
            prepared: Prepared = []
            for batch in preparer.batches(paths, defaults, prepared.append):
                prepared.append(batch)
            replies.send(("prepared", prepared))
        except Exception:
            replies.send(("failed", traceback.format_exc()))


if __name__ == "__main__":
    _serve()
