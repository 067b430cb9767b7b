"""The on-disk form of the log: one append-only file of records, one of checkpoints.

Why append-only files and not SQLite: every byte of a record is covered by what the
verifier checks (a marker, the entry's position, its length, the entry, its leaf hash),
so flipping any byte, dropping, reordering or truncating records is always detected and
placed; a database file has free space, page headers and b-tree bytes that no hash
covers, and would need its own engine to be read by an auditor. Appending is one
``write`` and one ``fsync``; a crash can only leave an incomplete last record, which was
never acknowledged and is cut off when the log is next opened for writing.

    record = b"ALE1" | position (u64, big-endian) | length (u32) | entry | H(0x00 || entry)
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from audit.merkle import HASH_SIZE, leaf_hash

MAGIC = b"ALE1"
HEADER = struct.Struct(">4sQI")
MAX_ENTRY_BYTES = 16 * 1024 * 1024
ENTRIES_FILE = "entries.log"
CHECKPOINTS_FILE = "checkpoints.log"
PRIVATE_KEY_FILE = "checkpoint-key.pem"
PUBLIC_KEY_FILE = "checkpoint-key.pub"
LOCK_FILE = "writer.lock"


@dataclass(frozen=True, slots=True)
class Record:
    position: int
    offset: int
    entry: bytes
    leaf_hash: bytes

    @property
    def end(self) -> int:
        return self.offset + HEADER.size + len(self.entry) + HASH_SIZE


@dataclass(frozen=True, slots=True)
class Damage:
    """Where the file stops being a valid log, and why."""

    position: int
    offset: int
    reason: str
    incomplete: bool
    """True when the file simply ends inside a record (a torn, never acknowledged write)."""


def encode_record(position: int, entry: bytes) -> bytes:
    if len(entry) > MAX_ENTRY_BYTES:
        raise ValueError(f"an entry of {len(entry)} bytes exceeds {MAX_ENTRY_BYTES}")
    return HEADER.pack(MAGIC, position, len(entry)) + entry + leaf_hash(entry)


def scan(
    data: bytes | memoryview, first_position: int = 0, offset: int = 0
) -> Iterator[Record | Damage]:
    """Records from ``offset`` on, in order; a ``Damage`` ends the scan."""
    view = memoryview(data)
    position = first_position
    size = len(view)
    while offset < size:
        if size - offset < HEADER.size:
            yield Damage(position, offset, "the file ends inside a record header", True)
            return
        magic, found_position, length = HEADER.unpack_from(view, offset)
        if magic != MAGIC:
            yield Damage(position, offset, "no record marker where entry should start", False)
            return
        if found_position != position:
            yield Damage(
                position,
                offset,
                f"the record here says it is entry {found_position}: entries are missing "
                "or out of order",
                False,
            )
            return
        if length > MAX_ENTRY_BYTES:
            yield Damage(position, offset, f"impossible entry length {length}", False)
            return
        end = offset + HEADER.size + length + HASH_SIZE
        if end > size:
            yield Damage(position, offset, "the file ends inside this entry", True)
            return
        entry = bytes(view[offset + HEADER.size : offset + HEADER.size + length])
        stored = bytes(view[end - HASH_SIZE : end])
        computed = leaf_hash(entry)
        if stored != computed:
            yield Damage(position, offset, "the entry does not match its stored hash", False)
            return
        yield Record(position, offset, entry, computed)
        position += 1
        offset = end


def read_file(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


@contextmanager
def mapped(path: Path) -> Iterator[memoryview]:
    """The file's bytes without copying them (an empty view for an empty file)."""
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            yield memoryview(b"")
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            view = memoryview(data)
            try:
                yield view
            finally:
                view.release()
