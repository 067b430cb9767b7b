"""Known subjects for the embedded default: a TOML file in the data directory that
gives each local user their roles, departments and care team.

With a hospital identity provider these attributes arrive with the token instead;
the CLI (``appliance search --user``, ``appliance policy test``) reads them from here.

    [users.dr-okafor]
    roles = ["clinician"]
    departments = ["cardiology"]
    care_team = ["P-10234"]
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from appliance.access.rules import Subject


class UnknownSubject(LookupError):
    pass


class SubjectDirectory:
    def __init__(self, path: Path) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path

    def subjects(self) -> dict[str, Subject]:
        if not self._path.exists():
            return {}
        try:
            with self._path.open("rb") as file:
                users = tomllib.load(file).get("users", {})
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{self._path}: not valid TOML: {error}") from None
        found = {}
        for user_id, entry in users.items():
            unknown = set(entry) - {"roles", "departments", "care_team"}
            if unknown:
                raise ValueError(
                    f"{self._path}: user {user_id!r} has unknown keys {sorted(unknown)}"
                )
            try:
                found[user_id] = Subject(
                    user_id=user_id,
                    roles=tuple(entry.get("roles", ())),
                    departments=tuple(d.lower() for d in entry.get("departments", ())),
                    care_team=tuple(entry.get("care_team", ())),
                )
            except ValueError as error:
                raise ValueError(f"{self._path}: user {user_id!r}: {error}") from None
        return found

    def get(self, user_id: str) -> Subject:
        subject = self.subjects().get(user_id)
        if subject is None:
            raise UnknownSubject(f"no user {user_id!r} in {self._path}")
        return subject
