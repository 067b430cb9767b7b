"""``appliance doctor``: is this appliance fit to answer? One line per check, each
``ok``, ``warn`` (works, but someone should look) or ``fail`` (answers are at risk), so
that IT can run it after an install, an upgrade or a restore, and from monitoring.

Nothing is written: the audit log is read, never opened for appending, and the stores
are only counted.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from appliance.engines import Appliance
from appliance.generate.prompt import FENCE_KEY_FILE
from appliance.model_registry import ModelNotInstalled, ModelUnavailable
from appliance.settings import Settings
from audit.checkpoints import load_public_key
from audit.reader import LogReader
from audit.store import ENTRIES_FILE, PRIVATE_KEY_FILE, PUBLIC_KEY_FILE
from audit.verify import verify_log
from audit.witness import read_witnessed

Status = Literal["ok", "warn", "fail"]

FREE_BYTES_FAIL = 1 << 30
FREE_BYTES_WARN = 10 << 30
CLOCK_SLACK = dt.timedelta(minutes=2)


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    summary: str


def roles_in_use(settings: Settings) -> set[str]:
    """The model roles the settings answer with: only these must be installed."""
    in_use = {settings.embedder_role, "spacy-vectors"}
    if settings.generator.kind == "llama-cpp":
        in_use.add(settings.generator.model_role)
    return in_use


def roles_to_verify(appliance: Appliance) -> list[str]:
    """The roles with a manifest and those the settings use: a role in use without one
    (llm-tuned before merge-generator) fails like a missing file, with resolve's reason."""
    in_use = roles_in_use(appliance.settings)
    return sorted({m.role for m in appliance.registry.manifests()} | in_use)


def run_checks(appliance: Appliance, stores_held_by: int | None = None) -> list[Check]:
    """Every check, in order. ``stores_held_by``: the pid of a running web service that
    holds the embedded stores (they admit one process; its ``/ready`` counts them)."""
    checks: list[tuple[str, Callable[[], tuple[Status, str]]]] = [
        ("models", lambda: _models(appliance)),
        ("policy", lambda: _policy(appliance)),
        ("users", lambda: _users(appliance)),
        ("stores", lambda: _stores(appliance, stores_held_by)),
        ("audit log", lambda: _audit(appliance.settings)),
        ("witness", lambda: _witness(appliance.settings)),
        ("permissions", lambda: _permissions(appliance.settings)),
        ("disk", lambda: _disk(appliance.settings.data_dir)),
        ("clock", lambda: _clock(appliance.settings)),
    ]
    results = []
    for name, check in checks:
        try:
            status, summary = check()
        except Exception as error:  # a check that cannot run is a failed check
            status, summary = "fail", f"{type(error).__name__}: {error}"
        results.append(Check(name, status, summary))
    return results


def _models(appliance: Appliance) -> tuple[Status, str]:
    in_use = roles_in_use(appliance.settings)
    verified: list[str] = []
    absent: list[str] = []
    broken: list[str] = []
    for role in roles_to_verify(appliance):
        try:
            appliance.registry.resolve(role)
            verified.append(role)
        except ModelNotInstalled:
            (broken if role in in_use else absent).append(role)
        except ModelUnavailable as error:
            broken.append(f"{role} ({error})")
    if broken:
        return "fail", f"missing or altered: {', '.join(broken)}"
    unused = f"; not installed and not used: {', '.join(absent)}" if absent else ""
    return "ok", f"{len(verified)} installed, sha256 as their manifests{unused}"


def _policy(appliance: Appliance) -> tuple[Status, str]:
    policy = appliance.policy.current()
    rules = len(policy.chunk_rules) + len(policy.system_rules) + len(policy.inheritance)
    return "ok", f"{rules} rules, version {policy.version[:12]}"


def _users(appliance: Appliance) -> tuple[Status, str]:
    users = appliance.subjects.subjects()
    if not users:
        return "warn", f"no users in {appliance.subjects.path}: nobody can sign in locally"
    return "ok", f"{len(users)} users in the directory"


def _stores(appliance: Appliance, held_by: int | None) -> tuple[Status, str]:
    if held_by is not None:
        return "ok", f"held by the web service (pid {held_by}); its /ready counts them"
    vouched = appliance.catalog.chunk_count()
    if behind := appliance.stores_behind():
        return "fail", (
            f"the catalog vouches for {vouched} chunks but {behind}; "
            "run 'appliance docs rebuild-stores'"
        )
    return "ok", f"{', '.join(appliance.store_counts())} each hold the catalog's {vouched} chunks"


def _audit(settings: Settings) -> tuple[Status, str]:
    directory = settings.audit_dir
    if not (directory / ENTRIES_FILE).exists():
        return "warn", "no audit log yet (made on the first ingestion or question)"
    report = verify_log(directory, load_public_key(directory / PUBLIC_KEY_FILE))
    if not report.ok:
        return "fail", "; ".join(str(p) for p in report.problems[:3])
    return "ok", f"{report.entries} entries and {report.checkpoints} signed checkpoints verify"


def _witness(settings: Settings) -> tuple[Status, str]:
    audit = settings.audit
    if audit.witness_dir is not None:
        witnessed = read_witnessed(audit.witness_dir)
        directory = settings.audit_dir
        report = verify_log(
            directory, load_public_key(directory / PUBLIC_KEY_FILE), witnessed=witnessed
        )
        if not report.ok:
            return "fail", "; ".join(str(p) for p in report.problems[:3])
        return "ok", f"{audit.witness_dir}: the log holds all {len(witnessed)} checkpoints it keeps"
    if audit.witness_syslog:
        return "ok", (
            f"syslog {audit.witness_syslog} (check the collector's file with "
            "'audit verify --witness FILE')"
        )
    return "warn", "none configured: cutting the end off the log would not show"


def _permissions(settings: Settings) -> tuple[Status, str]:
    loose = [
        f"{path} ({oct(stat.S_IMODE(path.stat().st_mode))})"
        for path in (
            settings.data_dir,
            settings.audit_dir / PRIVATE_KEY_FILE,
            settings.access_dir / "accounts.json",
            settings.data_dir / FENCE_KEY_FILE,
        )
        if path.exists() and stat.S_IMODE(path.stat().st_mode) & 0o077
    ]
    if loose:
        return "fail", f"readable by others: {', '.join(loose)}; chmod go= them"
    return "ok", (
        "data directory, audit signing key, accounts and fence key readable by their owner only"
    )


def _disk(data_dir: Path) -> tuple[Status, str]:
    usage = shutil.disk_usage(data_dir)
    free = f"{usage.free / (1 << 30):.1f} GiB free of {usage.total / (1 << 30):.0f} GiB"
    if usage.free < FREE_BYTES_FAIL:
        return "fail", f"{free}: ingestion and the audit log will fail"
    if usage.free < FREE_BYTES_WARN or usage.free < usage.total / 10:
        return "warn", free
    return "ok", free


def _clock(settings: Settings) -> tuple[Status, str]:
    """The clock must not be behind what the log already recorded: entries and
    break-the-glass expiries are compared by time."""
    now = dt.datetime.now(dt.UTC)
    directory = settings.audit_dir
    if not (directory / ENTRIES_FILE).exists():
        return "ok", f"{now.isoformat(timespec='seconds')} (no log to compare with)"
    last = None
    for record in LogReader(directory).records():
        last = record
    if last is None:
        return "ok", f"{now.isoformat(timespec='seconds')}"
    recorded = dt.datetime.fromisoformat(json.loads(last.entry)["time"].replace("Z", "+00:00"))
    if recorded - now > CLOCK_SLACK:
        return "fail", (
            f"the clock ({now.isoformat(timespec='seconds')}) is behind the log's last entry "
            f"({recorded.isoformat(timespec='seconds')}): fix the time source (NTP)"
        )
    return "ok", f"{now.isoformat(timespec='seconds')}, after the log's last entry"
