"""Witnessed checkpoints: cutting the end off the log (entries and checkpoints together)
verifies as OK on its own, and is caught against the witness's copy."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

from audit.checkpoints import load_public_key
from audit.log import AuditLog
from audit.store import CHECKPOINTS_FILE, ENTRIES_FILE, PUBLIC_KEY_FILE
from audit.verify import verify_log
from audit.witness import WITNESS_FILE, DirectoryWitness, SyslogWitness, read_witnessed

PROJECT = Path(__file__).resolve().parents[2]


def _append(log: AuditLog, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        log.append("audit_review", "audit-ito", ["compliance_officer"], {"action": f"search {n}"})


def _cut_log(tmp_path: Path) -> tuple[Path, Path]:
    """A log of 8 entries cut back to its first 5 (entries and checkpoints alike), with
    a witness that received both checkpoints."""
    log_dir, witness_dir = tmp_path / "audit", tmp_path / "witness-mount"
    log = AuditLog(log_dir, witness=DirectoryWitness(witness_dir))
    _append(log, 5)
    log.checkpoint()
    kept = {name: (log_dir / name).read_bytes() for name in (ENTRIES_FILE, CHECKPOINTS_FILE)}
    _append(log, 3, start=5)
    log.checkpoint()
    log.close()
    for name, data in kept.items():  # what someone with the disk can do: restore a prefix
        (log_dir / name).write_bytes(data)
    return log_dir, witness_dir


def test_a_cut_log_verifies_alone_and_fails_against_the_witness(tmp_path: Path) -> None:
    log_dir, witness_dir = _cut_log(tmp_path)
    key = load_public_key(log_dir / PUBLIC_KEY_FILE)
    alone = verify_log(log_dir, key)
    assert alone.ok and alone.entries == 5  # the threat: nothing inside says it was longer
    witnessed = read_witnessed(witness_dir)
    assert [c.size for c in witnessed] == [5, 8]
    checked = verify_log(log_dir, key, witnessed=witnessed)
    assert not checked.ok
    assert "entries 5 to 7 are missing" in str(checked.problems[0])
    assert "witnessed checkpoint #1" in str(checked.problems[0])


def test_audit_verify_with_the_witness_names_the_cut(tmp_path: Path) -> None:
    log_dir, witness_dir = _cut_log(tmp_path)
    command = [sys.executable, "-m", "audit.cli", "--dir", str(log_dir), "verify"]
    alone = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT)
    assert alone.returncode == 0
    witnessed = subprocess.run(
        [*command, "--witness", str(witness_dir)], capture_output=True, text=True, cwd=PROJECT
    )
    assert witnessed.returncode == 1
    assert "witness: 2 checkpoints, the last at size 8" in witnessed.stdout
    assert "FAIL entry 5: entries 5 to 7 are missing" in witnessed.stdout


def test_an_intact_log_passes_and_reports_what_the_witness_has_not_seen(tmp_path: Path) -> None:
    log_dir = tmp_path / "audit"
    log = AuditLog(log_dir, witness=DirectoryWitness(tmp_path / "witness"))
    _append(log, 4)
    log.checkpoint()
    _append(log, 2, start=4)  # after the last checkpoint: not yet witnessed
    log.close()
    report = verify_log(
        log_dir,
        load_public_key(log_dir / PUBLIC_KEY_FILE),
        witnessed=read_witnessed(tmp_path / "witness"),
    )
    assert report.ok and report.unwitnessed_entries == 0  # close() signs a last checkpoint


def test_an_unreachable_witness_never_stops_the_log(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the witness directory should be")
    log = AuditLog(tmp_path / "audit", witness=DirectoryWitness(blocked))
    _append(log, 3)
    log.checkpoint()
    assert log.size == 3 and log.witness_error and "not-a-directory" in log.witness_error
    assert log.last_witnessed is None
    log.close()


def test_checkpoints_reach_a_syslog_collector_and_are_read_from_its_file(tmp_path: Path) -> None:
    collector = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    collector.bind(("127.0.0.1", 0))
    collector.settimeout(5)
    host, port = collector.getsockname()
    log = AuditLog(tmp_path / "audit", witness=SyslogWitness(host, port))
    _append(log, 2)
    sent = log.checkpoint()
    message = collector.recv(65536).decode()
    collector.close()
    log.close()
    collector_file = tmp_path / "messages"
    collector_file.write_text(f"Dec  3 09:00:00 ward-host other service said hello\n{message}\n")
    [received] = read_witnessed(collector_file)
    assert received == sent


def test_the_witness_file_holds_only_checkpoints(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit", witness=DirectoryWitness(tmp_path / "w"))
    _append(log, 1)
    log.checkpoint()
    log.close()
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "w", copy)
    assert (copy / WITNESS_FILE).read_bytes().count(b"\n") == len(read_witnessed(copy)) >= 1


def test_a_collector_that_cannot_be_reached_is_reported(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = AuditLog(tmp_path / "audit", witness=SyslogWitness("127.0.0.1", port, tcp=True))
    _append(log, 2)
    log.checkpoint()
    assert log.size == 2 and log.witness_error and f"127.0.0.1:{port}" in log.witness_error
    log.close()
