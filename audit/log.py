"""The Python API for writing the audit log: append durably, with group commit.
(Reading and proofs: ``audit.reader``.)

Many threads and many processes may append at once. Each process has one writer
thread that takes every append waiting at that moment, writes them with one ``write``
and one ``fsync`` under an exclusive file lock, and only then answers each caller with
its position: an append that returned is on disk. Checkpoints are signed every
``checkpoint_every`` entries, every ``checkpoint_seconds`` while entries arrive, and when
the log is closed.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from audit.checkpoints import GENESIS, Checkpoint, load_or_create_key, sign
from audit.entries import make_entry
from audit.merkle import CompactRange
from audit.store import (
    CHECKPOINTS_FILE,
    ENTRIES_FILE,
    LOCK_FILE,
    PRIVATE_KEY_FILE,
    PUBLIC_KEY_FILE,
    Damage,
    Record,
    encode_record,
    mapped,
    scan,
)
from audit.witness import Witness

MAX_BATCH = 1024

log = logging.getLogger("audit")


class LogCorrupted(RuntimeError):
    """The log on disk is damaged; nothing more is appended until it is examined."""


@dataclass(frozen=True, slots=True)
class Receipt:
    position: int
    leaf_hash: bytes


class AuditLog:
    def __init__(
        self,
        directory: Path,
        *,
        checkpoint_every: int = 1000,
        checkpoint_seconds: float = 60.0,
        max_batch: int = MAX_BATCH,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
        witness: Witness | None = None,
    ) -> None:
        if checkpoint_every < 1 or checkpoint_seconds <= 0:
            raise ValueError("checkpoints need a positive interval in entries and in seconds")
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._entries_path = directory / ENTRIES_FILE
        self._checkpoints_path = directory / CHECKPOINTS_FILE
        self._entries_path.touch(exist_ok=True)
        self._checkpoints_path.touch(exist_ok=True)
        self._every = checkpoint_every
        self._max_batch = max_batch
        self._seconds = checkpoint_seconds
        self._clock = clock
        self._witness = witness
        self.witness_name = None if witness is None else witness.name
        self.last_witnessed: Checkpoint | None = None
        """The newest checkpoint the witness took from this process."""
        self.witness_error: str | None = None
        """Why the last checkpoint could not be witnessed; None once one is again."""
        self._key = load_or_create_key(directory / PRIVATE_KEY_FILE, directory / PUBLIC_KEY_FILE)
        self._lock_file = (directory / LOCK_FILE).open("a+b")
        self._entries_fd = os.open(self._entries_path, os.O_RDWR | os.O_APPEND)
        self._checkpoints_fd = os.open(self._checkpoints_path, os.O_RDWR | os.O_APPEND)
        self._tree = CompactRange()
        self._end = 0  # byte offset just past the last record this process knows
        self._checkpoints: list[Checkpoint] = []
        self._checkpoints_end = 0
        self._last_checkpoint_at = time.monotonic()
        self._mutex = threading.RLock()  # flock does not exclude threads of one process
        self._pending: queue.Queue[tuple[bytes, Future[Receipt]] | None] = queue.Queue()
        with self._exclusive():
            self._catch_up(repair=True)
        if witness is not None:
            try:
                held = witness.read_back()
            except OSError as error:
                held, self.witness_error = [], f"{witness.name}: {error}"
            self.last_witnessed = max(held, key=lambda c: c.size, default=None)
        self._writer = threading.Thread(target=self._write_loop, name="audit-writer", daemon=True)
        self._closed = False
        self._writer.start()

    # -- appending ---------------------------------------------------------------------

    def append(
        self,
        event_type: str,
        user: str,
        roles: list[str] | tuple[str, ...],
        details: Mapping[str, object],
        request_id: str | None = None,
    ) -> Receipt:
        """Log one event; returns once it is on disk. Bad events raise before anything
        is written (``audit.entries.EntryError``)."""
        return self.append_entry(make_entry(event_type, user, roles, details, request_id))

    def append_entry(self, entry: bytes) -> Receipt:
        if self._closed:
            raise RuntimeError("the audit log is closed")
        encode_record(0, entry)  # size check before queueing
        future: Future[Receipt] = Future()
        self._pending.put((entry, future))
        return future.result()

    def _write_loop(self) -> None:
        while True:
            try:
                first = self._pending.get(timeout=self._seconds)
            except queue.Empty:
                self._timed_checkpoint()
                continue
            batch = [first]
            while len(batch) < self._max_batch:
                try:
                    batch.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            work = [item for item in batch if item is not None]
            if work:
                self._commit(work)
            if stop:
                return

    def _commit(self, batch: list[tuple[bytes, Future[Receipt]]]) -> None:
        try:
            with self._exclusive():
                self._catch_up(repair=False)
                first = self._tree.size
                payload = b"".join(
                    encode_record(first + n, entry) for n, (entry, _) in enumerate(batch)
                )
                os.write(self._entries_fd, payload)
                os.fsync(self._entries_fd)
                receipts = []
                for record in scan(payload, first):
                    assert isinstance(record, Record)
                    self._add(record)
                    receipts.append(Receipt(record.position, record.leaf_hash))
                self._end += len(payload)
                grown = self._tree.size - self._last_checkpoint_size()
                late = time.monotonic() - self._last_checkpoint_at >= self._seconds
                if grown >= self._every or (grown and late):
                    self._write_checkpoint()
        except BaseException as error:
            for _, future in batch:
                future.set_exception(error)
            return
        for (_, future), receipt in zip(batch, receipts, strict=True):
            future.set_result(receipt)

    def _add(self, record: Record) -> None:
        self._tree.append(record.leaf_hash)

    # -- staying in step with other processes ------------------------------------------

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        with self._mutex:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)

    def _catch_up(self, *, repair: bool) -> None:
        """Read what other processes appended since we last looked (under the lock)."""
        with mapped(self._entries_path) as data:
            damage = None
            for item in scan(data, self._tree.size, self._end):
                if isinstance(item, Damage):
                    damage = item
                    break
                self._add(item)
                self._end = item.end
        if damage is not None:
            if damage.incomplete and repair:
                # A write that was never acknowledged (the writer died inside it).
                os.truncate(self._entries_path, damage.offset)
            else:
                raise LogCorrupted(
                    f"audit log damaged at entry {damage.position} (byte {damage.offset}): "
                    f"{damage.reason}; run 'audit verify'"
                )
        with mapped(self._checkpoints_path) as lines:
            tail = bytes(lines[self._checkpoints_end :])
        complete = tail[: tail.rfind(b"\n") + 1]
        if repair and len(complete) < len(tail):
            # A checkpoint whose writer died mid-line was never relied on: cut it off.
            os.truncate(self._checkpoints_path, self._checkpoints_end + len(complete))
        for line in complete.splitlines():
            self._checkpoints.append(Checkpoint.from_line(line))
        self._checkpoints_end += len(complete)

    # -- checkpoints -------------------------------------------------------------------

    def _last_checkpoint_size(self) -> int:
        return self._checkpoints[-1].size if self._checkpoints else 0

    def _write_checkpoint(self) -> Checkpoint:
        """Sign the current tree head and append it (the caller holds the file lock)."""
        size, root = self._tree.size, self._tree.root()
        previous = self._checkpoints[-1].digest() if self._checkpoints else GENESIS
        checkpoint = sign(self._key, size, root, previous, self._clock())
        line = checkpoint.line()
        os.write(self._checkpoints_fd, line)
        os.fsync(self._checkpoints_fd)
        self._checkpoints.append(checkpoint)
        self._checkpoints_end += len(line)
        self._last_checkpoint_at = time.monotonic()
        self._send_to_witness(checkpoint)
        return checkpoint

    def witnessed(self) -> list[Checkpoint]:
        """The checkpoints the witness holds, where the appliance can read them back."""
        return [] if self._witness is None else self._witness.read_back()

    def _send_to_witness(self, checkpoint: Checkpoint) -> None:
        """The log keeps working when the witness is away (entries are never refused for
        it); the failure is logged and shown, and the next checkpoint tries again."""
        if self._witness is None:
            return
        try:
            self._witness.record(checkpoint)
        except OSError as error:
            self.witness_error = f"{self._witness.name}: {error}"
            log.error("audit checkpoint %d not witnessed: %s", checkpoint.size, self.witness_error)
            return
        self.last_witnessed = checkpoint
        self.witness_error = None

    def _timed_checkpoint(self) -> None:
        due = time.monotonic() - self._last_checkpoint_at >= self._seconds
        if due:
            self.checkpoint(only_if_grown=True)

    def checkpoint(self, *, only_if_grown: bool = False) -> Checkpoint | None:
        """Sign the current tree head now (None when nothing new and only_if_grown)."""
        with self._exclusive():
            self._catch_up(repair=False)
            if only_if_grown and self._tree.size == self._last_checkpoint_size():
                self._last_checkpoint_at = time.monotonic()
                return None
            return self._write_checkpoint()

    def checkpoints(self) -> list[Checkpoint]:
        with self._exclusive():
            self._catch_up(repair=False)
        return list(self._checkpoints)

    # -- reading and proving -----------------------------------------------------------

    @property
    def size(self) -> int:
        with self._exclusive():
            self._catch_up(repair=False)
        return self._tree.size

    def root(self) -> bytes:
        with self._mutex:
            return self._tree.root()

    def records(self, start: int = 0) -> Iterator[Record]:
        """Every valid record from position ``start``; stops at the first damage."""
        with mapped(self._entries_path) as data:
            for item in scan(data):
                if isinstance(item, Damage):
                    return
                if item.position >= start:
                    yield item

    def close(self) -> None:
        """Finish pending appends, sign a final checkpoint, release the files."""
        if self._closed:
            return
        self._closed = True
        self._pending.put(None)
        self._writer.join()
        try:
            self.checkpoint(only_if_grown=True)
        finally:
            os.close(self._entries_fd)
            os.close(self._checkpoints_fd)
            self._lock_file.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
