"""Who holds a data directory's embedded stores.

tantivy and qdrant-edge admit one process per data directory. While the web service
runs on them it is that process, so the operator's commands (``appliance ingest``,
``docs remove``, ``search``) hand their work to it instead of opening the stores
themselves. The service records itself here when it starts, with its address and a
token drawn for this run, in a file only the data directory's owner can read (who can
read that file can read the stores anyway), and removes the record when it stops; a
record whose process is gone is ignored.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

OWNER_FILE = Path("services") / "store-owner.json"
TOKEN_HEADER = "x-operator-token"


@dataclass(frozen=True, slots=True)
class StoreOwner:
    pid: int
    url: str
    """Where the owner answers (``http://host:port``)."""
    token: str
    """What a command of the same account presents in ``TOKEN_HEADER``."""


def claim(data_dir: Path, url: str) -> StoreOwner:
    """Records this process as the owner, with a fresh token."""
    owner = StoreOwner(os.getpid(), url, secrets.token_urlsafe(32))
    path = data_dir / OWNER_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_suffix(".part")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(asdict(owner), handle)
    partial.replace(path)
    return owner


def release(data_dir: Path, owner: StoreOwner) -> None:
    """Removes the record, if it is still this owner's."""
    if current(data_dir) == owner:
        (data_dir / OWNER_FILE).unlink(missing_ok=True)


def current(data_dir: Path) -> StoreOwner | None:
    """The live owner of the stores, if a process holds them now."""
    try:
        owner = StoreOwner(**json.loads((data_dir / OWNER_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another account's
        pass
    return owner
