"""Access events (policy changes, break-the-glass grants and uses, filter/enforcer
mismatches) and the small interface through which they reach the audit trail.

In the product they go to the audit log (``appliance/audit_trail.py``), which has them
on disk before ``emit`` returns.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal, Protocol

EventKind = Literal[
    "policy_change",
    "break_glass_granted",
    "break_glass_ended",
    "break_glass_use",
    "access_mismatch",
    "account_change",
]


@dataclass(frozen=True, slots=True)
class AccessEvent:
    kind: EventKind
    actor: str
    at: str
    details: dict[str, object] = field(default_factory=dict)
    roles: tuple[str, ...] = ()
    request_id: str | None = None
    """The HTTP request that caused it, so the event joins that request's records."""

    @classmethod
    def now(
        cls,
        kind: EventKind,
        actor: str,
        details: dict[str, object],
        roles: tuple[str, ...] = (),
        request_id: str | None = None,
    ) -> AccessEvent:
        at = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds")
        return cls(kind, actor, at, details, roles, request_id)


class EventSink(Protocol):
    def emit(self, event: AccessEvent) -> None: ...


class CollectingEventSink:
    """Keeps events in memory: for callers that forward them elsewhere, and for tests."""

    def __init__(self) -> None:
        self.events: list[AccessEvent] = []

    def emit(self, event: AccessEvent) -> None:
        self.events.append(event)
