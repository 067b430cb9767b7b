"""Verification of a whole log by an auditor who trusts nothing but a public key (and,
optionally, a checkpoint they kept from an earlier visit).

Every record is re-read and re-hashed, the tree is rebuilt, and every checkpoint's
signature, chain link and root are checked against the rebuilt tree at its size.
The secondary index is never consulted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit.checkpoints import GENESIS, Checkpoint
from audit.merkle import CompactRange
from audit.store import CHECKPOINTS_FILE, ENTRIES_FILE, Damage, mapped, scan


@dataclass(slots=True)
class Problem:
    where: str
    """``entry N`` or ``checkpoint #K (size N)``: what to look at first."""
    position: int
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(slots=True)
class VerifyReport:
    entries: int = 0
    checkpoints: int = 0
    problems: list[Problem] = field(default_factory=list)
    witnessed: int = 0
    """Checkpoints a witness held, each checked against the log."""
    last_witnessed: Checkpoint | None = None

    @property
    def unwitnessed_entries(self) -> int:
        """Entries newer than anything the witness saw: the part a truncation could
        remove unseen, bounded by the checkpoint interval."""
        return self.entries - (self.last_witnessed.size if self.last_witnessed else 0)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def first_bad_entry(self) -> int | None:
        positions = [p.position for p in self.problems if p.where.startswith("entry")]
        return min(positions) if positions else None


def read_checkpoints(path: Path, report: VerifyReport) -> list[Checkpoint]:
    checkpoints = []
    raw = path.read_bytes() if path.exists() else b""
    for number, line in enumerate(raw.splitlines()):
        try:
            checkpoints.append(Checkpoint.from_line(line))
        except (ValueError, TypeError, json.JSONDecodeError):
            report.problems.append(
                Problem(f"checkpoint #{number}", -1, "unreadable (not a checkpoint record)")
            )
            return checkpoints
    if raw and not raw.endswith(b"\n"):
        report.problems.append(
            Problem(f"checkpoint #{len(checkpoints)}", -1, "the checkpoint file ends mid-line")
        )
    return checkpoints


def verify_log(
    directory: Path,
    public_key: Ed25519PublicKey,
    trusted: Checkpoint | None = None,
    witnessed: Sequence[Checkpoint] = (),
) -> VerifyReport:
    """Check everything; problems name the first bad entry or checkpoint by position.
    ``witnessed``: the checkpoints a witness kept (``audit.witness``); the log must
    still hold every entry each of them covers, unchanged."""
    report = VerifyReport()
    checkpoints = read_checkpoints(directory / CHECKPOINTS_FILE, report)
    report.checkpoints = len(checkpoints)
    previous = GENESIS
    for number, checkpoint in enumerate(checkpoints):
        where = f"checkpoint #{number} (size {checkpoint.size})"
        if not checkpoint.verify(public_key):
            report.problems.append(Problem(where, checkpoint.size, "bad signature"))
        if checkpoint.previous != previous:
            report.problems.append(
                Problem(where, checkpoint.size, "does not follow the checkpoint before it")
            )
        if number and checkpoint.size < checkpoints[number - 1].size:
            report.problems.append(Problem(where, checkpoint.size, "the log shrank"))
        previous = checkpoint.digest()
    if trusted is not None and not trusted.verify(public_key):
        report.problems.append(
            Problem("trusted checkpoint", trusted.size, "bad signature (wrong key or altered)")
        )

    # The roots each size must have: the log's own checkpoints and the auditor's.
    expected: dict[int, list[tuple[str, str]]] = {}
    for number, checkpoint in enumerate(checkpoints):
        label = f"checkpoint #{number} (size {checkpoint.size})"
        expected.setdefault(checkpoint.size, []).append((label, checkpoint.root))
    if trusted is not None:
        expected.setdefault(trusted.size, []).append(("trusted checkpoint", trusted.root))
    for number, checkpoint in enumerate(witnessed):
        label = f"witnessed checkpoint #{number} (size {checkpoint.size}, {checkpoint.time})"
        if not checkpoint.verify(public_key):
            report.problems.append(
                Problem(label, checkpoint.size, "bad signature (wrong key or altered)")
            )
            continue
        expected.setdefault(checkpoint.size, []).append((label, checkpoint.root))
        if report.last_witnessed is None or checkpoint.size >= report.last_witnessed.size:
            report.last_witnessed = checkpoint
    report.witnessed = len(witnessed)

    tree = CompactRange()
    _check_roots(tree, expected, report)
    damaged = False
    with mapped(directory / ENTRIES_FILE) as data:
        for item in scan(data):
            damaged = isinstance(item, Damage) or not _is_entry(item.entry)
            if isinstance(item, Damage):
                report.problems.append(
                    Problem(f"entry {item.position}", item.position, f"{item.reason} "
                            f"(byte {item.offset})")
                )  # fmt: skip
                break
            if not _is_entry(item.entry):
                report.problems.append(
                    Problem(f"entry {item.position}", item.position, "not a valid entry")
                )
                break
            tree.append(item.leaf_hash)
            _check_roots(tree, expected, report)
    report.entries = tree.size
    beyond = [label for size, labels in sorted(expected.items()) if size > tree.size
              for label, _root in labels]  # fmt: skip
    if beyond:
        covered = max(size for size in expected)
        why = "cannot be checked past the damage" if damaged else "are missing"
        report.problems.append(
            Problem(
                f"entry {tree.size}",
                tree.size,
                f"entries {tree.size} to {covered - 1} {why}: {len(beyond)} checkpoint(s) "
                f"cover them, up to {beyond[-1]}",
            )
        )
    report.problems.sort(key=lambda p: (p.position < 0, p.position))
    return report


def _check_roots(
    tree: CompactRange, expected: dict[int, list[tuple[str, str]]], report: VerifyReport
) -> None:
    for label, root in expected.get(tree.size, ()):
        if tree.root().hex() != root:
            report.problems.append(
                Problem(
                    label,
                    tree.size,
                    f"its root does not match entries 0 to {tree.size - 1}: an entry before "
                    "it was altered, or the checkpoint was replaced",
                )
            )


def _is_entry(data: bytes) -> bool:
    try:
        parsed = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(parsed, dict) and "schema" in parsed and "type" in parsed
