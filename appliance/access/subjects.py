"""Known subjects for the embedded default: a TOML file in the data directory that
gives each local user their roles, departments and care team.

With a hospital identity provider these attributes arrive with the token instead;
the CLI (``appliance search --user``, ``appliance policy test``) reads them from here.
``appliance users`` changes it (comments and layout of a hand-edited file are kept),
each change audited with who made it.

    [users.dr-okafor]
    roles = ["clinician"]
    departments = ["cardiology"]
    care_team = ["P-10234"]
"""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from appliance.access.events import AccessEvent, EventSink
from appliance.access.files import write_atomically
from appliance.access.rules import Subject

ATTRIBUTES = ("roles", "departments", "care_team")


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a change adds to or takes from a user."""

    roles: tuple[str, ...] = ()
    departments: tuple[str, ...] = ()
    care_team: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.roles or self.departments or self.care_team)

    def changes(self) -> dict[str, list[str]]:
        return {name: list(getattr(self, name)) for name in ATTRIBUTES if getattr(self, name)}


NOTHING = Attributes()


class UnknownSubject(LookupError):
    pass


class SubjectDirectory:
    def __init__(self, path: Path, events: EventSink | None = None) -> None:
        self._path = path
        self._events = events
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path

    def subjects(self) -> dict[str, Subject]:
        if not self._path.exists():
            return {}
        return self._parse(self._path.read_text(encoding="utf-8"), self._path)

    @staticmethod
    def _parse(text: str, path: Path) -> dict[str, Subject]:
        try:
            users = tomllib.loads(text).get("users", {})
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{path}: not valid TOML: {error}") from None
        found = {}
        for user_id, entry in users.items():
            unknown = set(entry) - set(ATTRIBUTES)
            if unknown:
                raise ValueError(f"{path}: user {user_id!r} has unknown keys {sorted(unknown)}")
            try:
                found[user_id] = Subject(
                    user_id=user_id,
                    roles=tuple(entry.get("roles", ())),
                    departments=tuple(d.lower() for d in entry.get("departments", ())),
                    care_team=tuple(entry.get("care_team", ())),
                )
            except ValueError as error:
                raise ValueError(f"{path}: user {user_id!r}: {error}") from None
        return found

    def get(self, user_id: str) -> Subject:
        subject = self.subjects().get(user_id)
        if subject is None:
            raise UnknownSubject(f"no user {user_id!r} in {self._path}")
        return subject

    # -- changes (``appliance users``) ----------------------------------------------------

    def add(self, user_id: str, attributes: Attributes, actor: str) -> Subject:
        """A new user with their roles (at least one), departments and care team."""
        if not attributes.roles:
            raise ValueError("a user needs at least one role")
        with self._lock:
            document = self._document()
            users = document.setdefault("users", tomlkit.table(is_super_table=True))
            if user_id in users:
                raise ValueError(f"user {user_id!r} is already in {self._path}")
            entry = tomlkit.table()
            for name in ATTRIBUTES:
                entry[name] = list(getattr(attributes, name))
            users[user_id] = entry
            subject = self._save(document, user_id)
        self._announce(actor, "added", user_id, attributes.changes())
        return subject

    def change(
        self, user_id: str, actor: str, *, grant: Attributes = NOTHING,
        revoke: Attributes = NOTHING,
    ) -> Subject:  # fmt: skip
        """Grant and revoke roles, departments and care-team patients; revoking what the
        user does not hold, or the last role, is an error and changes nothing."""
        if not grant and not revoke:
            raise ValueError("nothing to change: name a role, department or patient")
        with self._lock:
            document = self._document()
            entry = document.get("users", {}).get(user_id)
            if entry is None:
                raise UnknownSubject(f"no user {user_id!r} in {self._path}")
            for name in ATTRIBUTES:
                held = list(entry.get(name, []))
                missing = [v for v in getattr(revoke, name) if v not in held]
                if missing:
                    raise ValueError(f"{user_id} does not have {name.replace('_', ' ')} {missing}")
                kept = [v for v in held if v not in getattr(revoke, name)]
                kept += [v for v in getattr(grant, name) if v not in kept]
                if name == "roles" and not kept:
                    raise ValueError(f"{user_id} would have no role left; remove the user instead")
                entry[name] = kept
            subject = self._save(document, user_id)
        changes = {f"granted {k}": v for k, v in grant.changes().items()}
        changes |= {f"revoked {k}": v for k, v in revoke.changes().items()}
        self._announce(actor, "changed", user_id, changes)
        return subject

    def remove(self, user_id: str, actor: str) -> None:
        with self._lock:
            document = self._document()
            users = document.get("users", {})
            if user_id not in users:
                raise UnknownSubject(f"no user {user_id!r} in {self._path}")
            del users[user_id]
            write_atomically(self._path, tomlkit.dumps(document))
        self._announce(actor, "removed", user_id, {})

    def _document(self) -> tomlkit.TOMLDocument:
        if not self._path.exists():
            self._path.parent.mkdir(parents=True, exist_ok=True)
            return tomlkit.document()
        return tomlkit.parse(self._path.read_text(encoding="utf-8"))

    def _save(self, document: tomlkit.TOMLDocument, user_id: str) -> Subject:
        """Written only once the whole file still reads as a directory."""
        text = tomlkit.dumps(document)
        checked = SubjectDirectory._parse(text, self._path)
        write_atomically(self._path, text)
        return checked[user_id]

    def _announce(
        self, actor: str, action: str, user_id: str, changes: Mapping[str, Sequence[str]]
    ) -> None:
        if self._events is not None:
            self._events.emit(
                AccessEvent.now(
                    "account_change",
                    actor,
                    {"action": action, "user": user_id, "changes": dict(changes)},
                )
            )
