"""Backing up and restoring a data directory: what cannot be made again, and nothing
that can.

A backup holds the catalog (every document's text, chunks, labels and parse graphs), the
access files (policy, users, local accounts, break-the-glass ledger), the audit log
with its signing key and the prompts' fence key (so that a restored site asked the same
question on the same documents writes the same prompt), each with its sha256 in a
manifest. The stores (BM25, vectors, the knowledge graph) are not in it: they are made
again from the catalog on restore, so a backup taken while the service runs is consistent
(SQLite's online backup for the databases; the audit checkpoints copied before the
entries, so every checkpoint's entries are there). The archive holds patient documents
and the audit signing key: it is written readable by its owner only, and belongs where
the data directory's own copies go.

A restore goes into an empty data directory only, refuses a file whose sha256 differs
from the manifest (naming it), verifies the audit log against its signed checkpoints,
rebuilds the stores and checks that they hold what the catalog vouches for.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, cast

from appliance.generate.prompt import FENCE_KEY_FILE
from appliance.model_registry import sha256_of
from appliance.settings import Settings
from audit.checkpoints import load_public_key
from audit.reader import LogReader
from audit.store import CHECKPOINTS_FILE, ENTRIES_FILE, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE
from audit.verify import verify_log

FORMAT = 1
MANIFEST = "manifest.json"
DATABASES = ("catalog.sqlite3", "access/break_glass.sqlite3")
"""Copied through SQLite's online backup, consistent while the service writes."""
ACCESS_FILES = ("access/policy.csv", "access/subjects.toml", "access/accounts.json")
SITE_FILES = (FENCE_KEY_FILE,)
AUDIT_FILES = (CHECKPOINTS_FILE, ENTRIES_FILE, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE)
"""In this order: checkpoints before entries, so no checkpoint outruns the entries."""


class Manifest(TypedDict):
    format: int
    created_at: str
    documents: int
    chunks: int
    audit_entries: int
    files: dict[str, str]
    """Each file's path in the data directory and its sha256."""


class BackupError(RuntimeError):
    """A backup that cannot be made or restored, with what to do."""


@dataclass(frozen=True, slots=True)
class BackupReport:
    archive: Path
    files: int
    documents: int
    chunks: int
    audit_entries: int


@dataclass(frozen=True, slots=True)
class RestoreReport:
    files: int
    documents: int
    chunks: int
    audit_entries: int
    checkpoints: int


def backup(settings: Settings, destination: Path) -> BackupReport:
    """One archive in ``destination`` of what the data directory cannot make again."""
    data = settings.data_dir
    if not (data / "catalog.sqlite3").exists():
        raise BackupError(f"{data} holds no catalog: nothing has been ingested there")
    destination.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    archive = destination / f"appliance-backup-{stamp}.tar.gz"
    with tempfile.TemporaryDirectory(dir=destination, prefix=".backup-") as staging_name:
        staging = Path(staging_name)
        copied: list[str] = []
        for name in DATABASES:
            if (data / name).exists():
                _copy_database(data / name, staging / name)
                copied.append(name)
        for name in (*ACCESS_FILES, *SITE_FILES, *(f"audit/{f}" for f in AUDIT_FILES)):
            if (data / name).exists():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(data / name, staging / name)
                copied.append(name)
        documents, chunks = _catalog_counts(staging / "catalog.sqlite3")
        entries = _entries(staging / "audit")
        manifest: Manifest = {
            "format": FORMAT,
            "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "documents": documents,
            "chunks": chunks,
            "audit_entries": entries,
            "files": {name: sha256_of(staging / name) for name in copied},
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        descriptor = os.open(archive, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            tar.add(staging / MANIFEST, arcname=MANIFEST)
            for name in copied:
                tar.add(staging / name, arcname=name)
    return BackupReport(archive, len(copied), documents, chunks, entries)


def restore(
    settings: Settings,
    archive: Path,
    rebuild_stores: Callable[[], tuple[int, dict[str, int]]],
    public_key: Path | None = None,
) -> RestoreReport:
    """Unpack ``archive`` into the (empty) data directory, check every file, verify the
    audit log, then ``rebuild_stores`` (the chunks written, and each store's count),
    which must all equal the catalog's. On any failure the data directory is left as
    it was found: empty."""
    data = settings.data_dir
    if data.exists() and any(data.iterdir()):
        raise BackupError(
            f"{data} is not empty: restore into an empty data directory "
            "(move the current one aside first)"
        )
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            manifest = _manifest(tar)
            data.mkdir(parents=True, exist_ok=True, mode=0o700)
            tar.extractall(data, members=_members(tar, manifest), filter="data")
        for name, expected in manifest["files"].items():
            if sha256_of(data / name) != expected:
                raise BackupError(
                    f"{name} differs from the backup's manifest: the archive was altered"
                )
        audit_dir = data / "audit"
        key = load_public_key(public_key or audit_dir / PUBLIC_KEY_FILE)
        report = verify_log(audit_dir, key)
        if not report.ok:
            problems = "; ".join(str(p) for p in report.problems)
            raise BackupError(f"the restored audit log does not verify: {problems}")
        written, counts = rebuild_stores()
        documents, chunks = _catalog_counts(data / "catalog.sqlite3")
        wrong = {store: n for store, n in counts.items() if n != chunks}
        if written != chunks or wrong:
            raise BackupError(
                f"the rebuilt stores disagree with the catalog's {chunks} chunks: {wrong}"
            )
    except (tarfile.TarError, OSError, KeyError, ValueError) as error:
        _empty(data)
        raise BackupError(f"{archive} is not a readable appliance backup ({error})") from error
    except BaseException:
        _empty(data)
        raise
    return RestoreReport(
        len(manifest["files"]), documents, chunks, report.entries, report.checkpoints
    )


def _manifest(tar: tarfile.TarFile) -> Manifest:
    member = tar.extractfile(MANIFEST)
    if member is None:
        raise BackupError("the archive has no manifest: not an appliance backup")
    manifest = json.loads(member.read())
    if manifest.get("format") != FORMAT:
        raise BackupError(f"backup format {manifest.get('format')!r}; this version reads {FORMAT}")
    return cast(Manifest, manifest)


def _members(tar: tarfile.TarFile, manifest: Manifest) -> list[tarfile.TarInfo]:
    """Only the files the manifest names: anything else in the archive is refused."""
    named = set(manifest["files"])
    members = [m for m in tar.getmembers() if m.name != MANIFEST]
    extra = sorted(m.name for m in members if m.name not in named)
    if extra:
        raise BackupError(f"the archive holds files its manifest does not name: {extra}")
    missing = sorted(named - {m.name for m in members})
    if missing:
        raise BackupError(f"the archive lacks files its manifest names: {missing}")
    return members


def _copy_database(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with (
        sqlite3.connect(f"file:{source}?mode=ro", uri=True) as live,
        sqlite3.connect(target) as copy,
    ):
        live.backup(copy)
    live.close()
    copy.close()


def _catalog_counts(catalog: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{catalog}?mode=ro", uri=True) as db:
        (documents,) = db.execute(
            "SELECT count(*) FROM documents WHERE state = 'indexed'"
        ).fetchone()
        (chunks,) = db.execute(
            "SELECT count(*) FROM chunks JOIN documents USING (doc_id) WHERE state = 'indexed'"
        ).fetchone()
    db.close()
    return int(documents), int(chunks)


def _entries(audit_dir: Path) -> int:
    if not (audit_dir / ENTRIES_FILE).exists():
        return 0
    return LogReader(audit_dir).levels().size


def _empty(data: Path) -> None:
    """Back to an empty directory after a failed restore: nothing half-restored stays."""
    if data.exists():
        for child in data.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
