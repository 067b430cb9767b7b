"""Local accounts for the embedded default: Argon2id password hashes in the data
directory (``access/accounts.json``, mode 0600). Who a user is (roles, departments, care
team) stays in the subjects directory; this file only proves they are who they say."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import tempfile
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD_CHARS = 12


class AccountError(ValueError):
    """A password that may not be set, or an account file that cannot be read."""


class LocalAccounts:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._hasher = PasswordHasher()
        # Verifying against this when the user is unknown takes as long as a real check,
        # so response times do not tell which user names exist.
        self._decoy = self._hasher.hash(secrets.token_urlsafe(16))
        self._cached: tuple[tuple[int, int, int], dict[str, str]] | None = None

    def _read(self) -> dict[str, str]:
        """The hashes, read again whenever the file changed (another process may edit it)."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return {}
        version = (info.st_ino, info.st_mtime_ns, info.st_size)  # replaced, not rewritten
        if self._cached is not None and self._cached[0] == version:
            return dict(self._cached[1])
        try:
            data = json.loads(self.path.read_text("utf-8"))
            hashes = {str(k): str(v) for k, v in data["password_hashes"].items()}
        except (ValueError, KeyError, AttributeError) as error:
            raise AccountError(f"{self.path} is not a valid account file: {error}") from error
        self._cached = (version, hashes)
        return dict(hashes)

    def stamp(self, user_id: str) -> str | None:
        """A fingerprint of the user's current credential: it changes with the password,
        and is None once the account is removed (sessions opened with it then end)."""
        stored = self._read().get(user_id)
        return None if stored is None else hashlib.sha256(stored.encode()).hexdigest()

    def _write(self, hashes: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".accounts-")
        try:
            os.fchmod(handle, 0o600)
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"password_hashes": hashes}, out, indent=2, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def set_password(self, user_id: str, password: str) -> None:
        if len(password) < MIN_PASSWORD_CHARS:
            raise AccountError(f"a password has at least {MIN_PASSWORD_CHARS} characters")
        hashes = self._read()
        hashes[user_id] = self._hasher.hash(password)
        self._write(hashes)

    def remove(self, user_id: str) -> bool:
        hashes = self._read()
        if hashes.pop(user_id, None) is None:
            return False
        self._write(hashes)
        return True

    def verify(self, user_id: str, password: str) -> bool:
        stored = self._read().get(user_id)
        try:
            self._hasher.verify(stored or self._decoy, password)
        except (VerificationError, InvalidHashError):
            return False
        return stored is not None

    def users(self) -> list[str]:
        return sorted(self._read())
