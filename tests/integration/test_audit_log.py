"""The audit log on disk: systematic tampering, crashes and concurrent writers."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from audit.checkpoints import Checkpoint, load_private_key, load_public_key, sign
from audit.entries import EntryError
from audit.log import AuditLog, LogCorrupted
from audit.merkle import leaf_hash, verify_consistency, verify_inclusion
from audit.reader import LogReader
from audit.store import (
    CHECKPOINTS_FILE,
    ENTRIES_FILE,
    HEADER,
    PRIVATE_KEY_FILE,
    PUBLIC_KEY_FILE,
    Record,
)
from audit.verify import VerifyReport, verify_log
from tests.conftest import SLOW

PROJECT = Path(__file__).resolve().parents[2]
ENTRIES = 1000


def _fill(directory: Path, count: int) -> None:
    with AuditLog(directory, checkpoint_every=100) as log:
        for n in range(count):
            log.append(
                "question",
                f"user-{n % 7}",
                ["clinician"],
                {"query": f"question number {n}", "filters": "everything", "candidates": []},
            )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("audit-template") / "log"
    _fill(directory, ENTRIES)
    return directory


@pytest.fixture(scope="module")
def records(template: Path) -> list[Record]:
    return list(LogReader(template).records())


def _verify(directory: Path) -> VerifyReport:
    return verify_log(directory, load_public_key(directory / PUBLIC_KEY_FILE))


def _tampered(template: Path, target: Path, change: Callable[[bytearray], bytes | bytearray],
              file: str = ENTRIES_FILE) -> VerifyReport:  # fmt: skip
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(template, target)
    path = target / file
    path.write_bytes(bytes(change(bytearray(path.read_bytes()))))
    return _verify(target)


def _flip(offset: int) -> Callable[[bytearray], bytearray]:
    def change(data: bytearray) -> bytearray:
        data[offset] ^= 0x01
        return data

    return change


def test_the_untouched_log_verifies(template: Path) -> None:
    report = _verify(template)
    assert report.ok, report.problems
    assert report.entries == ENTRIES and report.checkpoints == 10


def test_any_flipped_byte_of_any_field_is_found_at_its_entry(
    template: Path, records: list[Record], tmp_path: Path
) -> None:
    step = 1 if SLOW else 53
    positions = sorted({0, ENTRIES - 1, *range(0, ENTRIES, step)})
    cases = 0
    for position in positions:
        record = records[position]
        body = record.offset + HEADER.size
        fields = {
            "marker": record.offset,
            "position": record.offset + 4 + 7,
            "length": record.offset + 12 + 3,
            "entry start": body,
            "entry middle": body + len(record.entry) // 2,
            "entry end": body + len(record.entry) - 1,
            "leaf hash": body + len(record.entry) + 5,
        }
        for field, offset in fields.items():
            report = _tampered(template, tmp_path / "log", _flip(offset))
            assert not report.ok, (position, field)
            assert report.first_bad_entry == position, (position, field, report.problems[:2])
            cases += 1
    assert cases >= 7 * len(positions)


def test_every_byte_of_some_records_is_covered(
    template: Path, records: list[Record], tmp_path: Path
) -> None:
    chosen = [records[3], records[500], records[-1]] if SLOW else [records[500]]
    for record in chosen:
        for offset in range(record.offset, record.end):
            report = _tampered(template, tmp_path / "log", _flip(offset))
            assert report.first_bad_entry == record.position, offset


def test_a_deleted_entry_is_named(template: Path, records: list[Record], tmp_path: Path) -> None:
    for position in sorted({0, 1, 99, 100, 517, ENTRIES - 2, ENTRIES - 1, *range(7, ENTRIES, 97)}):
        record = records[position]
        report = _tampered(
            template,
            tmp_path / "log",
            lambda data, r=record: data[: r.offset] + data[r.end :],
        )
        assert report.first_bad_entry == position, (position, report.problems[:2])


def test_two_reordered_entries_are_named(
    template: Path, records: list[Record], tmp_path: Path
) -> None:
    rng = random.Random(2)
    pairs = [(0, 1), (10, 11), (998, 999)] + [
        tuple(sorted(rng.sample(range(ENTRIES), 2))) for _ in range(20)
    ]
    for first, second in pairs:
        a, b = records[first], records[second]

        def swap(data: bytearray, a: Record = a, b: Record = b) -> bytes:
            return (
                bytes(data[: a.offset]) + bytes(data[b.offset : b.end])
                + bytes(data[a.end : b.offset]) + bytes(data[a.offset : a.end])
                + bytes(data[b.end :])
            )  # fmt: skip

        report = _tampered(template, tmp_path / "log", swap)
        assert report.first_bad_entry == first, (first, second, report.problems[:2])


def test_a_truncated_tail_is_named(template: Path, records: list[Record], tmp_path: Path) -> None:
    for position in (1, 250, 999, *range(33, ENTRIES, 111)):
        record = records[position]
        for cut in (
            record.offset,
            record.offset + 3,
            record.offset + HEADER.size + 2,
            record.end - 1,
        ):
            report = _tampered(template, tmp_path / "log", lambda data, c=cut: data[:c])
            assert report.first_bad_entry == position, (position, cut, report.problems[:2])


def test_an_entry_rewritten_with_a_fresh_hash_is_caught_by_the_next_checkpoint(
    template: Path, records: list[Record], tmp_path: Path
) -> None:
    for position in (0, 150, 999):
        record = records[position]
        forged = record.entry.replace(b"question number", b"question NUMBER")

        def rewrite(data: bytearray, r: Record = record, entry: bytes = forged) -> bytes:
            new = HEADER.pack(b"ALE1", r.position, len(entry)) + entry + leaf_hash(entry)
            return bytes(data[: r.offset]) + new + bytes(data[r.end :])

        report = _tampered(template, tmp_path / "log", rewrite)
        covering = (position // 100 + 1) * 100
        assert not report.ok
        assert report.problems[0].where.endswith(f"(size {covering})"), report.problems[0]


def _checkpoint_lines(template: Path) -> list[bytes]:
    return (template / CHECKPOINTS_FILE).read_bytes().splitlines(keepends=True)


def test_replaced_dropped_reordered_or_altered_checkpoints_are_named(
    template: Path, tmp_path: Path
) -> None:
    lines = _checkpoint_lines(template)
    checkpoints = [Checkpoint.from_line(line) for line in lines]
    real_key = load_private_key(template / PRIVATE_KEY_FILE)
    other_key = Ed25519PrivateKey.generate()
    now = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    for number, checkpoint in enumerate(checkpoints):
        wrong_root = leaf_hash(b"not the root")
        replacements = {
            "signed by another key": sign(
                other_key, checkpoint.size, bytes.fromhex(checkpoint.root), checkpoint.previous, now
            ),
            "re-signed with the real key over another root": sign(
                real_key, checkpoint.size, wrong_root, checkpoint.previous, now
            ),
        }
        for how, replacement in replacements.items():
            changed = [*lines]
            changed[number] = replacement.line()
            report = _tampered(
                template, tmp_path / "log", lambda _d, c=changed: b"".join(c), CHECKPOINTS_FILE
            )
            assert not report.ok, how
            assert any(p.where.startswith(f"checkpoint #{number} ") for p in report.problems), (
                how, number, report.problems,
            )  # fmt: skip
        flipped = [*lines]
        line = bytearray(lines[number])
        line[len(line) // 2] ^= 0x01
        flipped[number] = bytes(line)
        report = _tampered(
            template, tmp_path / "log", lambda _d, c=flipped: b"".join(c), CHECKPOINTS_FILE
        )
        assert any(f"checkpoint #{number}" in p.where for p in report.problems), report.problems
    for number in range(len(lines) - 1):
        dropped = lines[:number] + lines[number + 1 :]
        report = _tampered(
            template, tmp_path / "log", lambda _d, c=dropped: b"".join(c), CHECKPOINTS_FILE
        )
        assert any(p.where.startswith(f"checkpoint #{number} ") for p in report.problems)
        swapped = [*lines]
        swapped[number], swapped[number + 1] = swapped[number + 1], swapped[number]
        report = _tampered(
            template, tmp_path / "log", lambda _d, c=swapped: b"".join(c), CHECKPOINTS_FILE
        )
        assert any(p.where.startswith(f"checkpoint #{number} ") for p in report.problems)


def test_proofs_from_the_live_log_verify_against_its_signed_checkpoints(template: Path) -> None:
    reader = LogReader(template)
    checkpoints = reader.checkpoints()
    for position in (0, 1, 99, 100, 573, 999):
        size = reader.proof_size(position)
        proof = reader.inclusion_proof(position, size)
        signed = next(c for c in checkpoints if c.size == size)
        assert proof.root.hex() == signed.root
        assert verify_inclusion(proof.leaf_hash, position, size, proof.path, proof.root)
    levels = reader.levels()
    for old, new in itertools.pairwise(checkpoints):
        path = levels.consistency_proof(old.size, new.size)
        assert verify_consistency(
            old.size, new.size, bytes.fromhex(old.root), bytes.fromhex(new.root), path
        )


def test_bad_events_are_refused_and_change_nothing(tmp_path: Path) -> None:
    with AuditLog(tmp_path / "log") as log:
        with pytest.raises(EntryError, match="unknown event type"):
            log.append("coffee", "u", [], {})
        with pytest.raises(EntryError, match="needs details"):
            log.append("ingestion", "u", [], {"doc_id": "d"})
        with pytest.raises(EntryError, match="finite"):
            log.append(
                "question", "u", [], {"query": "q", "filters": "", "candidates": [float("nan")]}
            )
        assert log.size == 0
    assert (tmp_path / "log" / PRIVATE_KEY_FILE).stat().st_mode & 0o777 == 0o600


def test_a_damaged_log_refuses_further_appends(template: Path, tmp_path: Path) -> None:
    target = tmp_path / "log"
    shutil.copytree(template, target)
    path = target / ENTRIES_FILE
    data = bytearray(path.read_bytes())
    data[5000] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(LogCorrupted, match="audit log damaged at entry"):
        AuditLog(target)


def _run_writer(directory: Path, label: str, count: int, threads: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.integration.audit_writer", str(directory), label,
         str(count), str(threads)],
        cwd=PROJECT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _acknowledged(output: str) -> dict[str, int]:
    """doc id -> position for every append the writer saw return."""
    found = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3:
            label, number, position = parts
            found[f"{label}-{number}"] = int(position)
    return found


def _logged(directory: Path) -> dict[str, int]:
    return {
        json.loads(r.entry)["details"]["doc_id"]: r.position for r in LogReader(directory).records()
    }


def test_concurrent_threads_and_processes_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    AuditLog(directory).close()  # the key, created once at install
    writers = [_run_writer(directory, f"p{n}", 60, 4) for n in range(2)]
    with AuditLog(directory, checkpoint_every=37) as log:
        import threading

        def work(thread: int) -> None:
            for n in range(60):
                log.append("ingestion", "in-process", ["it_admin"],
                           {"doc_id": f"t-{thread}-{n}", "version": "1", "chunk_ids": []})  # fmt: skip

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    acknowledged: dict[str, int] = {}
    for writer in writers:
        output, _ = writer.communicate(timeout=120)
        assert writer.returncode == 0
        acknowledged.update(_acknowledged(output))
    logged = _logged(directory)
    assert len(logged) == 4 * 60 + 2 * 4 * 60 == len(list(LogReader(directory).records()))
    assert all(logged[doc] == position for doc, position in acknowledged.items())
    report = _verify(directory)
    assert report.ok, report.problems


def test_a_writer_killed_at_random_moments_loses_no_acknowledged_append(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    AuditLog(directory).close()
    rng = random.Random(17)
    kills = 200 if SLOW else 4
    acknowledged: dict[str, int] = {}
    for round_number in range(kills):
        writer = _run_writer(directory, f"r{round_number}", 100_000, 2)
        time.sleep(rng.uniform(0.25, 0.6))  # start-up is ~0.2 s; then it appends
        writer.kill()
        output, _ = writer.communicate()
        acknowledged.update(_acknowledged(output))
        AuditLog(directory).close()  # the next start repairs a torn tail and signs
        report = _verify(directory)
        assert report.ok, (round_number, report.problems)
        logged = _logged(directory)
        missing = [doc for doc, position in acknowledged.items() if logged.get(doc) != position]
        assert not missing, (round_number, missing[:5])
    assert len(acknowledged) > kills  # the writers really were appending when killed


def test_the_header_layout_is_what_the_store_documents() -> None:
    assert HEADER.size == 16 and struct.calcsize(">4sQI") == 16


def test_checkpoints_come_every_n_entries_and_every_m_seconds(tmp_path: Path) -> None:
    with AuditLog(tmp_path / "by-count", checkpoint_every=10, checkpoint_seconds=3600) as log:
        for n in range(35):
            log.append("removal", "u", [], {"doc_id": f"d{n}"})
        assert [c.size for c in log.checkpoints()] == [10, 20, 30]
    assert [c.size for c in LogReader(tmp_path / "by-count").checkpoints()] == [10, 20, 30, 35]

    with AuditLog(tmp_path / "by-time", checkpoint_every=10_000, checkpoint_seconds=0.2) as log:
        log.append("removal", "u", [], {"doc_id": "a"})
        deadline = time.monotonic() + 5
        while not log.checkpoints() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [c.size for c in log.checkpoints()] == [1]  # idle: signed by the timer
        for n in range(3):
            time.sleep(0.25)
            log.append("removal", "u", [], {"doc_id": f"b{n}"})  # busy: signed as it commits
        assert log.checkpoints()[-1].size >= 3
