"""Test helpers for the store servers: where the suite's OpenSearch node answers, and a
TCP forwarder in front of it that a test can cut in the middle of a request stream, as
a node that stops or a network that drops does, and then mend."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from urllib.parse import urlsplit

OPENSEARCH_URL = os.environ.get("APPLIANCE_TEST_OPENSEARCH_URL", "http://127.0.0.1:9200")
NO_NODE = (
    f"no OpenSearch answers at {OPENSEARCH_URL}: start one with "
    "scripts/servers/opensearch.sh start (make test does)"
)


class CuttableLink:
    """Forwards 127.0.0.1:``port`` to the node. ``cut_at(marker, n)``: the ``n``-th time
    a request carrying ``marker`` passes, every connection is closed and new ones are
    refused until ``mend()``."""

    def __init__(self, target_url: str = OPENSEARCH_URL) -> None:
        target = urlsplit(target_url)
        self._target = (target.hostname or "127.0.0.1", target.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._marker: bytes | None = None
        self._left = 0
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut_at(self, marker: bytes, occurrence: int) -> None:
        with self._lock:
            self._marker, self._left = marker, occurrence

    def mend(self) -> None:
        with self._lock:
            self._marker = None
            self.cut.clear()

    def close(self) -> None:
        self._cut_all()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.cut.is_set():
                client.close()  # a node that is down refuses
                continue
            server = socket.create_connection(self._target)
            with self._lock:
                self._open += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        try:
            while data := source.recv(65536):
                if upstream and self._cuts(data):
                    self._cut_all()
                    return
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.close()

    def _cuts(self, data: bytes) -> bool:
        with self._lock:
            if self._marker is None or self._marker not in data:
                return False
            self._left -= data.count(self._marker)
            if self._left > 0:
                return False
            self._marker = None
            self.cut.set()
            return True

    def _cut_all(self) -> None:
        with self._lock:
            sockets, self._open = self._open, []
        for end in sockets:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()
