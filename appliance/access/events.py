"""Access events (policy changes, break-the-glass grants and uses, filter/enforcer
mismatches) and the small interface through which they reach the audit trail.

The audit log proper is its own package; until the appliance writes into it, the
embedded default appends these events to a JSON-lines file in the data directory,
fsynced before ``emit`` returns, so that none is lost.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, Protocol

EventKind = Literal[
    "policy_change",
    "break_glass_granted",
    "break_glass_ended",
    "break_glass_use",
    "access_mismatch",
]


@dataclass(frozen=True, slots=True)
class AccessEvent:
    kind: EventKind
    actor: str
    at: str
    details: dict[str, object] = field(default_factory=dict)

    @classmethod
    def now(cls, kind: EventKind, actor: str, details: dict[str, object]) -> AccessEvent:
        return cls(kind, actor, dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"), details)


class EventSink(Protocol):
    def emit(self, event: AccessEvent) -> None: ...


class JsonLinesEventSink:
    """Appends one JSON object per event and fsyncs before returning."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path = path
        self._lock = threading.Lock()

    def emit(self, event: AccessEvent) -> None:
        line = json.dumps(asdict(event), sort_keys=True, separators=(",", ":")) + "\n"
        with self._lock, self._path.open("a", encoding="utf-8") as file:
            file.write(line)
            file.flush()
            os.fsync(file.fileno())

    def read(self) -> list[AccessEvent]:
        if not self._path.exists():
            return []
        with self._path.open(encoding="utf-8") as file:
            return [AccessEvent(**json.loads(line)) for line in file if line.strip()]


class CollectingEventSink:
    """Keeps events in memory: for callers that forward them elsewhere, and for tests."""

    def __init__(self) -> None:
        self.events: list[AccessEvent] = []

    def emit(self, event: AccessEvent) -> None:
        self.events.append(event)
