"""The ``audit`` tool as a compliance officer runs it, in its own process."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from audit.entries import make_entry
from audit.log import AuditLog
from audit.merkle import verify_inclusion
from audit.store import ENTRIES_FILE


def _audit(
    directory: Path, *args: str, timezone: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "audit.cli", "--dir", str(directory), *args],
        capture_output=True,
        text=True,
        check=False,
        env=None if timezone is None else {**os.environ, "TZ": timezone},
    )


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "audit"
    with AuditLog(directory, checkpoint_every=10) as log:
        for n in range(25):
            log.append(
                "ingestion",
                "it-santos",
                ["it_admin"],
                {"doc_id": f"doc-{n % 3}", "version": "1", "chunk_ids": [f"doc-{n % 3}@1#{n}"]},
            )
    return directory


def test_verify_prove_show_checkpoint_key_and_query(log_dir: Path, tmp_path: Path) -> None:
    result = _audit(log_dir, "verify")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "25 entries, 3 checkpoints" in result.stdout and "OK" in result.stdout

    for args, size in ((("prove", "7"), 25), (("prove", "7", "--size", "10"), 10)):
        proof = json.loads(_audit(log_dir, *args).stdout)  # against the latest signed root
        assert proof["tree_size"] == size and proof["checkpoint"]["size"] == size
        assert proof["root"] == proof["checkpoint"]["root"]
        assert verify_inclusion(
            bytes.fromhex(proof["leaf_hash"]), 7, size,
            [bytes.fromhex(h) for h in proof["path"]], bytes.fromhex(proof["root"]),
        )  # fmt: skip

    shown = json.loads(_audit(log_dir, "show", "7").stdout)
    assert shown["entry"] == 7 and shown["details"]["doc_id"] == "doc-1"
    checkpoint = _audit(log_dir, "checkpoint").stdout
    assert json.loads(checkpoint)["size"] == 25
    assert _audit(log_dir, "key").stdout.startswith("-----BEGIN PUBLIC KEY-----")

    found = [
        json.loads(line) for line in _audit(log_dir, "query", "--doc", "doc-2").stdout.splitlines()
    ]
    assert [e["entry"] for e in found] == [2, 5, 8, 11, 14, 17, 20, 23]
    assert _audit(log_dir, "query", "--user", "nobody").stdout == ""
    assert "indexed 25 entries" in _audit(log_dir, "reindex").stdout

    # An auditor's kept checkpoint: the log must extend it.
    kept = tmp_path / "kept-checkpoint.json"
    kept.write_text(checkpoint)
    assert _audit(log_dir, "verify", "--from-checkpoint", str(kept)).returncode == 0
    forged = json.loads(checkpoint) | {"root": "00" * 32}
    kept.write_text(json.dumps(forged))
    result = _audit(log_dir, "verify", "--from-checkpoint", str(kept))
    assert result.returncode == 1 and "trusted checkpoint" in result.stdout


def test_export_carries_a_proof_for_every_entry(log_dir: Path) -> None:
    lines = _audit(log_dir, "export", "--format", "jsonl").stdout.splitlines()
    assert len(lines) == 25
    for line in lines:
        row = json.loads(line)
        assert verify_inclusion(
            bytes.fromhex(row["leaf_hash"]), row["entry"], row["tree_size"],
            [bytes.fromhex(h) for h in row["proof"]], bytes.fromhex(row["root"]),
        )  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(_audit(log_dir, "export", "--format", "csv").stdout)))
    assert len(rows) == 25 and rows[3]["type"] == "ingestion" and rows[3]["proof"]
    first_time = json.loads(lines[5])["entry_json"]["time"]
    later = _audit(log_dir, "export", "--from", first_time).stdout.splitlines()
    assert len(later) == 20


def test_a_to_date_includes_its_whole_local_day_and_an_empty_export_says_so(
    tmp_path: Path,
) -> None:
    """Dates are days of the machine's own time zone (New York here); "--to D" counts D
    to its last moment; an explicit time stays exclusive."""
    directory = tmp_path / "audit"
    moments = ["2026-03-01T03:00", "2026-03-01T12:00", "2026-03-02T04:59", "2026-03-02T05:00"]
    with AuditLog(directory) as log:
        for n, moment in enumerate(moments):
            when = dt.datetime.fromisoformat(moment).replace(tzinfo=dt.UTC)
            details = {"doc_id": f"doc-{n}", "version": "1", "chunk_ids": []}
            log.append_entry(make_entry("ingestion", "it-santos", ["it_admin"], details, time=when))

    def exported(*args: str) -> list[int]:
        result = _audit(directory, "export", *args, timezone="America/New_York")
        assert result.returncode == 0, result.stderr
        return [json.loads(line)["entry"] for line in result.stdout.splitlines()]

    assert exported("--from", "2026-03-01", "--to", "2026-03-01") == [1, 2]
    assert exported("--to", "2026-03-01T12:00:00+00:00") == [0]
    empty = _audit(directory, "export", "--from", "2025-01-01", "--to", "2025-01-31")
    assert empty.returncode == 0 and empty.stdout == ""
    assert "no entries from 2025-01-01 to 2025-01-31" in empty.stderr
    bad = _audit(directory, "export", "--to", "the first of March")
    assert bad.returncode == 2 and "not an ISO date or time" in bad.stderr
    found = _audit(directory, "query", "--from", "2026-03-01", "--to", "2026-03-01",
                   timezone="America/New_York")  # fmt: skip
    assert [json.loads(line)["entry"] for line in found.stdout.splitlines()] == [1, 2]


def test_verify_fails_and_names_the_entry_after_tampering(log_dir: Path) -> None:
    path = log_dir / ENTRIES_FILE
    data = bytearray(path.read_bytes())
    data[data.index(b"doc-2@1#14") + 4] ^= 0x01
    path.write_bytes(bytes(data))
    result = _audit(log_dir, "verify")
    assert result.returncode == 1
    assert "first bad entry: 14" in result.stdout


def test_a_missing_log_is_a_clear_error(tmp_path: Path) -> None:
    result = _audit(tmp_path / "nowhere", "show", "0")
    assert result.returncode == 2 and "no audit log" in result.stderr
