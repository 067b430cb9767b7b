"""``appliance doctor``, ``appliance backup``, ``appliance restore`` and ``appliance
version``: what IT runs after an install or an upgrade, every night, and on the day a
disk dies."""

from __future__ import annotations

import json
import time
from importlib.metadata import version as installed_version
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from appliance.cli.common import console, errors, fail, open_appliance
from appliance.cli.running_service import running_service
from appliance.engines import Appliance
from appliance.index.base import STORE_LAYOUT_VERSION
from appliance.operate.backup import BackupError, backup, restore
from appliance.operate.doctor import run_checks
from appliance.settings import Settings

_STYLE = {"ok": "green", "warn": "yellow", "fail": "red"}


def version(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """The installed version and its store layout: an upgrade that changes the layout
    rebuilds the stores from the catalog (``appliance docs rebuild-stores``)."""
    release = {"version": installed_version("clinical-appliance"),
               "store_layout": STORE_LAYOUT_VERSION}  # fmt: skip
    if as_json:
        console.print_json(json.dumps(release))
    else:
        console.print(
            f"clinical-appliance {release['version']} (store layout {STORE_LAYOUT_VERSION})",
            highlight=False,
        )


def doctor() -> None:
    """Check models, policy, users, stores, audit log and witness, permissions, disk and
    clock: one line each. Exit status 1 when any check fails."""
    service = running_service()
    held_by = service.owner.pid if service is not None else None
    if service is not None:
        service.close()
    with open_appliance() as appliance:
        checks = run_checks(appliance, held_by)
    for check in checks:
        style = _STYLE[check.status]
        console.print(
            f"[{style}]{check.status:<4}[/{style}] {check.name:<12} {escape(check.summary)}",
            highlight=False,
        )
    failed = [c.name for c in checks if c.status == "fail"]
    warned = [c.name for c in checks if c.status == "warn"]
    summary = f"{len(checks) - len(failed)} of {len(checks)} checks pass"
    summary += f" ({len(warned)} with a warning: {', '.join(warned)})" if warned else ""
    console.print(summary + (f"; failed: {', '.join(failed)}" if failed else ""))
    if failed:
        raise typer.Exit(code=1)


def backup_command(
    destination: Annotated[Path, typer.Argument(help="The folder the archive is written to.")],
) -> None:
    """Archive the catalog, the access files and the audit log (with its key), each with
    its sha256; the stores are rebuilt from the catalog on restore. Safe while the
    service runs. The archive holds patient documents: keep it as the data directory."""
    started = time.monotonic()
    try:
        report = backup(Settings(), destination)
    except BackupError as error:
        raise fail(str(error)) from None
    console.print(
        f"backed up {report.documents} documents ({report.chunks} chunks) and "
        f"{report.audit_entries} audit entries in {report.files} files to {report.archive} "
        f"in {time.monotonic() - started:.1f} s",
        highlight=False,
    )


def restore_command(
    archive: Annotated[Path, typer.Argument(help="An archive made by 'appliance backup'.")],
    public_key: Annotated[
        Path | None,
        typer.Option(help="Your own copy of the audit public key to verify the log with."),
    ] = None,
) -> None:
    """Restore into the (empty) data directory: every file checked against the backup's
    manifest, the audit log verified, the stores rebuilt and compared with the catalog."""
    settings = Settings()
    started = time.monotonic()

    def rebuild_stores() -> tuple[int, dict[str, int]]:
        with Appliance(settings) as appliance:
            errors.print("[dim]rebuilding the stores from the catalog...[/dim]")
            written = appliance.ingestor.rebuild_stores()
            return written, appliance.store_counts()

    try:
        report = restore(settings, archive, rebuild_stores, public_key)
    except BackupError as error:
        raise fail(str(error)) from None
    console.print(
        f"restored {report.documents} documents ({report.chunks} chunks, stores rebuilt and "
        f"in agreement) and {report.audit_entries} audit entries ({report.checkpoints} signed "
        f"checkpoints verify) into {settings.data_dir} in {time.monotonic() - started:.1f} s",
        highlight=False,
    )
