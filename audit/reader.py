"""Reading a log without writing to it: what auditors, exports and proofs need.

Opens nothing for writing, takes no lock and creates no key, so it works on a copy of
the log handed to an auditor as well as on the live one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.checkpoints import Checkpoint
from audit.entries import time_bound
from audit.merkle import MerkleLevels
from audit.store import CHECKPOINTS_FILE, ENTRIES_FILE, Damage, Record, mapped, scan


@dataclass(frozen=True, slots=True)
class InclusionProof:
    position: int
    leaf_hash: bytes
    size: int
    root: bytes
    path: list[bytes]


class LogReader:
    def __init__(self, directory: Path) -> None:
        if not (directory / ENTRIES_FILE).exists():
            raise FileNotFoundError(f"no audit log in {directory} (no {ENTRIES_FILE})")
        self.directory = directory
        self._levels: MerkleLevels | None = None

    def records(self, start: int = 0) -> Iterator[Record]:
        """Valid records from position ``start``, in order; stops at the first damage
        (``audit verify`` says where and why)."""
        with mapped(self.directory / ENTRIES_FILE) as data:
            for item in scan(data):
                if isinstance(item, Damage):
                    return
                if item.position >= start:
                    yield item

    def record(self, position: int) -> Record:
        for record in self.records(position):
            return record
        raise IndexError(f"no entry {position} in the log")

    def checkpoints(self) -> list[Checkpoint]:
        path = self.directory / CHECKPOINTS_FILE
        if not path.exists():
            return []
        return [Checkpoint.from_line(line) for line in path.read_bytes().splitlines()]

    def latest_checkpoint(self) -> Checkpoint | None:
        checkpoints = self.checkpoints()
        return checkpoints[-1] if checkpoints else None

    def levels(self) -> MerkleLevels:
        if self._levels is None:
            levels = MerkleLevels()
            for record in self.records():
                levels.append(record.leaf_hash)
            self._levels = levels
        return self._levels

    def inclusion_proof(self, position: int, size: int | None = None) -> InclusionProof:
        levels = self.levels()
        size = levels.size if size is None else size
        path = levels.inclusion_proof(position, size)
        return InclusionProof(position, levels.levels[0][position], size, levels.root(size), path)

    def proof_size(self, position: int) -> int:
        """The tree size to prove against: the latest checkpoint that covers the entry
        (so the proof ends at a signed root), else the whole log."""
        covering = [c.size for c in self.checkpoints() if c.size > position]
        return covering[-1] if covering else self.levels().size


def exported(
    reader: LogReader, latest: Checkpoint | None, since: str | None, until: str | None
) -> Iterator[dict[str, Any]]:
    """The entries of a time range, each with its inclusion proof in the tree the latest
    signed checkpoint covers (or the current tree, for entries after it). A bare date as
    ``until`` includes that whole day (``entries.time_bound``)."""
    since, until = time_bound(since), time_bound(until, end=True)
    for record in reader.records():
        entry = json.loads(record.entry)
        if (since and entry["time"] < since) or (until and entry["time"] >= until):
            continue
        covered = latest is not None and record.position < latest.size
        size = latest.size if covered and latest else reader.levels().size
        proof = reader.inclusion_proof(record.position, size)
        yield {
            "entry": record.position,
            "entry_json": entry,
            "leaf_hash": record.leaf_hash.hex(),
            "tree_size": size,
            "root": proof.root.hex(),
            "proof": [h.hex() for h in proof.path],
            "checkpoint_signature": latest.signature if covered and latest else "",
        }
