"""Audit log throughput, verification time and proofs, side by side with baselines.

- durable appends per second, one writer and 8 concurrent writers, with group commit
  (every waiting append shares one fsync) against one fsync per append;
- ``audit verify`` time for a log of 1,000,000 entries (written in the writer's own
  record format, checkpoints every 1,000, by a bulk writer: appending a million entries
  one by one through fsync would take far longer than verifying them);
- inclusion proof size and time from stored perfect subtrees, against recomputing the
  path from every leaf hash (RFC 6962's recursion as written).

    .venv/bin/python benchmarks/audit_log.py [--entries 1000000] [--appends 4000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from audit.checkpoints import GENESIS, load_or_create_key, load_public_key, sign
from audit.entries import make_entry
from audit.log import AuditLog
from audit.merkle import CompactRange, leaf_hash, node_hash, verify_inclusion
from audit.reader import LogReader
from audit.store import (
    CHECKPOINTS_FILE,
    ENTRIES_FILE,
    PRIVATE_KEY_FILE,
    PUBLIC_KEY_FILE,
    encode_record,
)
from audit.verify import verify_log

RESULTS = Path(__file__).resolve().parent / "results" / "audit_log.json"
console = Console()


def _question(n: int) -> dict[str, object]:
    return {
        "query": f"what is the first antibiotic dose for sepsis, case {n}",
        "filters": "(departments in [emergency, icu, all] and in force on 2026-12-01)",
        "candidates": [
            {
                "chunk_id": f"sepsis-bundle-v4@4#{n % 97:012x}",
                "rrf": 0.0328,
                "cage": 0.61,
                "access": "allowed",
            },
            {
                "chunk_id": f"antimicrobial-formulary@2#{n % 89:012x}",
                "rrf": 0.0311,
                "cage": 0.55,
                "access": "allowed",
            },
        ],
    }


def appends_per_second(writers: int, total: int, max_batch: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        log = AuditLog(Path(folder), checkpoint_every=1000, max_batch=max_batch)
        per_writer = total // writers

        def work() -> None:
            for n in range(per_writer):
                log.append("question", "dr-okafor", ["clinician"], _question(n))

        threads = [threading.Thread(target=work) for _ in range(writers)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        log.close()
    return per_writer * writers / elapsed


def bulk_log(directory: Path, entries: int) -> None:
    """A log in the writer's format, with a signed checkpoint every 1,000 entries."""
    key = load_or_create_key(directory / PRIVATE_KEY_FILE, directory / PUBLIC_KEY_FILE)
    tree, previous = CompactRange(), GENESIS
    moment = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    with (
        (directory / ENTRIES_FILE).open("wb") as out,
        (directory / CHECKPOINTS_FILE).open("wb") as signed,
    ):
        chunk: list[bytes] = []
        for n in range(entries):
            entry = make_entry(
                "question", f"user-{n % 50}", ["clinician"], _question(n), f"req-{n}", moment
            )
            chunk.append(encode_record(n, entry))
            tree.append(leaf_hash(entry))
            if tree.size % 1000 == 0 or n == entries - 1:
                out.write(b"".join(chunk))
                chunk = []
                checkpoint = sign(key, tree.size, tree.root(), previous, moment)
                signed.write(checkpoint.line())
                previous = checkpoint.digest()


def naive_path(leaves: list[bytes], m: int) -> list[bytes]:
    def mth(part: list[bytes]) -> bytes:
        if len(part) == 1:
            return part[0]
        k = 1 << ((len(part) - 1).bit_length() - 1)
        return node_hash(mth(part[:k]), mth(part[k:]))

    if len(leaves) == 1:
        return []
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    if m < k:
        return [*naive_path(leaves[:k], m), mth(leaves[k:])]
    return [*naive_path(leaves[k:], m - k), mth(leaves[:k])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--appends", type=int, default=4000)
    args = parser.parse_args()
    figures: dict[str, object] = {}

    table = Table(title="durable appends per second")
    for column in ("writers", "one fsync per append", "group commit (ours)"):
        table.add_column(column)
    for writers in (1, 8):
        baseline = appends_per_second(writers, args.appends, max_batch=1)
        ours = appends_per_second(writers, args.appends, max_batch=1024)
        figures[f"appends_per_s_{writers}_writers"] = {
            "one_fsync_each": round(baseline),
            "group_commit": round(ours),
        }
        table.add_row(str(writers), f"{baseline:,.0f}", f"{ours:,.0f}")
    console.print(table)

    with tempfile.TemporaryDirectory() as folder:
        directory = Path(folder)
        start = time.perf_counter()
        bulk_log(directory, args.entries)
        written = time.perf_counter() - start
        size_mb = (directory / ENTRIES_FILE).stat().st_size / 1e6
        start = time.perf_counter()
        report = verify_log(directory, load_public_key(directory / PUBLIC_KEY_FILE))
        verified = time.perf_counter() - start
        assert report.ok, report.problems[:3]
        figures["verify"] = {"entries": report.entries, "checkpoints": report.checkpoints,
                             "megabytes": round(size_mb), "seconds": round(verified, 1)}  # fmt: skip
        console.print(
            f"verify: {report.entries:,} entries ({size_mb:,.0f} MB, {report.checkpoints:,} "
            f"checkpoints) in [bold]{verified:.1f} s[/bold] (log written in {written:.0f} s)"
        )

        reader = LogReader(directory)
        start = time.perf_counter()
        levels = reader.levels()
        built = time.perf_counter() - start
        positions = [0, 1, 4242, args.entries // 2, args.entries - 1]
        timings, sizes = [], []
        for position in positions:
            start = time.perf_counter()
            proof = reader.inclusion_proof(position, levels.size)
            timings.append((time.perf_counter() - start) * 1e6)
            sizes.append(len(proof.path) * 32)
            assert verify_inclusion(proof.leaf_hash, position, levels.size, proof.path, proof.root)
        leaves = levels.levels[0]
        start = time.perf_counter()
        naive = naive_path(leaves, args.entries // 2)
        naive_seconds = time.perf_counter() - start
        assert naive == reader.inclusion_proof(args.entries // 2, levels.size).path
        figures["proof"] = {"bytes": max(sizes), "hashes": max(sizes) // 32,
                            "microseconds_p50": round(statistics.median(timings)),
                            "index_build_seconds": round(built, 1),
                            "naive_recompute_seconds": round(naive_seconds, 1)}  # fmt: skip
        console.print(
            f"inclusion proof at {levels.size:,} entries: {max(sizes)} bytes "
            f"({max(sizes) // 32} hashes), {statistics.median(timings):.0f} us p50 from stored "
            f"subtrees (built once in {built:.1f} s) vs {naive_seconds:.1f} s recomputed from every leaf"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"command": "benchmarks/audit_log.py", **figures}, indent=2) + "\n"
    )
    console.print(f"written to {RESULTS.name}")


if __name__ == "__main__":
    main()
