"""Audit entries: canonical JSON with a schema version, so that the same event always
hashes to the same bytes and a verifier needs nothing but this file to read them."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Mapping
from typing import overload

SCHEMA_VERSION = 1
EVENT_TYPES = {
    "question": ("query", "filters", "candidates"),
    "answer": ("query", "sentences"),
    "ingestion": ("doc_id", "version", "chunk_ids"),
    "removal": ("doc_id",),
    "policy_change": ("added", "removed"),
    "break_glass_granted": ("grant_id", "reason"),
    "break_glass_use": ("grant_id", "chunk_ids"),
    "break_glass_ended": ("grant_id",),
    "break_glass_reviewed": ("grant_id", "note"),
    "access_mismatch": ("chunk_id",),
    "account_change": ("action", "user"),
    "audit_review": ("action",),
    "sign_in": ("method",),
    "sign_in_failed": ("method", "attempted_user"),
    "sign_out": ("method",),
    "document_view": ("doc_id", "version", "why"),
    "feedback": ("answer_request", "kind", "query", "documents"),
}
"""Every event type and the detail keys it must carry."""


class EntryError(ValueError):
    """An event that cannot be logged as given (unknown type, missing detail, bad value)."""


def canonical_json(value: object) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8; NaN and infinities refused."""
    _check_finite(value)
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _check_finite(value: object) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise EntryError(f"{value} cannot be logged: only finite numbers")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise EntryError(f"detail keys must be text, not {key!r}")
            _check_finite(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_finite(item)


def make_entry(
    event_type: str,
    user: str,
    roles: list[str] | tuple[str, ...],
    details: Mapping[str, object],
    request_id: str | None = None,
    time: dt.datetime | None = None,
) -> bytes:
    """The canonical bytes of one entry; raises EntryError before anything is written."""
    required = EVENT_TYPES.get(event_type)
    if required is None:
        raise EntryError(f"unknown event type {event_type!r}; known: {', '.join(EVENT_TYPES)}")
    missing = [key for key in required if key not in details]
    if missing:
        raise EntryError(f"a {event_type} entry needs details {missing}")
    if not user:
        raise EntryError("every entry names its actor")
    moment = (time or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return canonical_json(
        {
            "schema": SCHEMA_VERSION,
            "type": event_type,
            "time": moment.isoformat(timespec="microseconds"),
            "actor": {"user": user, "roles": sorted(roles)},
            "request_id": request_id or str(uuid.uuid4()),
            "details": dict(details),
        }
    )


def parse_entry(data: bytes) -> dict[str, object]:
    parsed = json.loads(data.decode("utf-8"))
    if not isinstance(parsed, dict) or parsed.get("schema") != SCHEMA_VERSION:
        raise EntryError("not an audit entry of schema version 1")
    return parsed


def references(entry: Mapping[str, object]) -> set[tuple[str, str]]:
    """The documents and chunks an entry mentions, for the secondary index."""
    found: set[tuple[str, str]] = set()

    def walk(value: object) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                if key == "doc_id" and isinstance(item, str):
                    found.add(("doc", item))
                elif key == "chunk_id" and isinstance(item, str):
                    found.add(("chunk", item))
                elif key == "chunk_ids" and isinstance(item, list):
                    found.update(("chunk", c) for c in item if isinstance(c, str))
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(entry.get("details"))
    return found


@overload
def time_bound(value: str, *, end: bool = False) -> str: ...
@overload
def time_bound(value: None, *, end: bool = False) -> None: ...
def time_bound(value: str | None, *, end: bool = False) -> str | None:
    """A range bound (an ISO date or time) in the entries' own time format, UTC with
    microseconds, so that comparing the text compares the moments. A time without a zone,
    or a date, is the machine's local time. A bare date as the end of a range ("to
    2026-03-01") means the whole of that day: the bound is the next day's first moment."""
    if value is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise EntryError(f"{value!r} is not an ISO date or time") from None
    if end and "T" not in value and " " not in value:
        moment += dt.timedelta(days=1)
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.astimezone(dt.UTC).isoformat(timespec="microseconds")
