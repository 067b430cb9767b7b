"""The Merkle tree against the published RFC 6962 vectors and a brute-force reference."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from audit.merkle import (
    EMPTY_ROOT,
    CompactRange,
    MerkleLevels,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "data" / "rfc6962_vectors.json").read_text()
)
LEAVES = [bytes.fromhex(h) for h in VECTORS["leaves"]]


def _levels(entries: list[bytes]) -> MerkleLevels:
    levels = MerkleLevels()
    for entry in entries:
        levels.append(leaf_hash(entry))
    return levels


# -- the brute-force reference: RFC 6962 section 2.1, recursion as written ------------------


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _mth(entries: list[bytes]) -> bytes:
    if not entries:
        return _h(b"")
    if len(entries) == 1:
        return _h(b"\x00" + entries[0])
    k = 1
    while k * 2 < len(entries):
        k *= 2
    return _h(b"\x01" + _mth(entries[:k]) + _mth(entries[k:]))


def _path(m: int, entries: list[bytes]) -> list[bytes]:
    if len(entries) == 1:
        return []
    k = 1
    while k * 2 < len(entries):
        k *= 2
    if m < k:
        return [*_path(m, entries[:k]), _mth(entries[k:])]
    return [*_path(m - k, entries[k:]), _mth(entries[:k])]


def _subproof(m: int, entries: list[bytes], whole: bool) -> list[bytes]:
    n = len(entries)
    if m == n:
        return [] if whole else [_mth(entries)]
    k = 1
    while k * 2 < n:
        k *= 2
    if m <= k:
        return [*_subproof(m, entries[:k], whole), _mth(entries[k:])]
    return [*_subproof(m - k, entries[k:], False), _mth(entries[:k])]


# -- published vectors ----------------------------------------------------------------------


def test_roots_match_the_published_vectors() -> None:
    assert EMPTY_ROOT.hex() == VECTORS["empty_root"] == _levels([]).root().hex()
    for size, expected in enumerate(VECTORS["roots"], start=1):
        assert _levels(LEAVES[:size]).root().hex() == expected
        compact = CompactRange()
        for entry in LEAVES[:size]:
            compact.append(leaf_hash(entry))
        assert compact.root().hex() == expected


@pytest.mark.parametrize("case", VECTORS["inclusion"], ids=lambda c: f"{c['index']}-of-{c['size']}")
def test_inclusion_proofs_match_the_published_vectors(case: dict) -> None:  # type: ignore[type-arg]
    levels = _levels(LEAVES)
    proof = levels.inclusion_proof(case["index"], case["size"])
    assert [h.hex() for h in proof] == case["path"]
    root = bytes.fromhex(VECTORS["roots"][case["size"] - 1])
    assert verify_inclusion(
        leaf_hash(LEAVES[case["index"]]), case["index"], case["size"], proof, root
    )


@pytest.mark.parametrize("case", VECTORS["consistency"], ids=lambda c: f"{c['old']}-to-{c['new']}")
def test_consistency_proofs_match_the_published_vectors(case: dict) -> None:  # type: ignore[type-arg]
    levels = _levels(LEAVES)
    proof = levels.consistency_proof(case["old"], case["new"])
    assert [h.hex() for h in proof] == case["path"]
    old_root = bytes.fromhex(VECTORS["roots"][case["old"] - 1])
    new_root = bytes.fromhex(VECTORS["roots"][case["new"] - 1])
    assert verify_consistency(case["old"], case["new"], old_root, new_root, proof)


# -- random trees against the reference -----------------------------------------------------


def test_every_proof_of_random_trees_equals_the_reference_and_verifies() -> None:
    rng = random.Random(11)
    for size in [*range(1, 40), 63, 64, 65, 127, 128, 129, 200]:
        entries = [rng.randbytes(rng.randint(0, 40)) for _ in range(size)]
        levels = _levels(entries)
        roots = [_mth(entries[:n]) for n in range(size + 1)]
        assert levels.root() == roots[size]
        for m in range(size):
            proof = levels.inclusion_proof(m, size)
            assert proof == _path(m, entries)
            assert verify_inclusion(leaf_hash(entries[m]), m, size, proof, roots[size])
        for old in range(1, size + 1):
            proof = levels.consistency_proof(old, size)
            assert proof == _subproof(old, entries, True)
            assert verify_consistency(old, size, roots[old], roots[size], proof)


def test_altered_proofs_wrong_leaves_and_wrong_sizes_are_refused() -> None:
    rng = random.Random(3)
    for size in (2, 5, 8, 13, 33):
        entries = [rng.randbytes(8) for _ in range(size)]
        levels = _levels(entries)
        root = levels.root()
        for m in range(size):
            proof = levels.inclusion_proof(m, size)
            leaf = leaf_hash(entries[m])
            assert not verify_inclusion(leaf_hash(b"other"), m, size, proof, root)
            assert not verify_inclusion(leaf, (m + 1) % size, size, proof, root)
            assert not verify_inclusion(leaf, size, size, proof, root)
            for i in range(len(proof)):
                bent = [*proof]
                bent[i] = bytes([bent[i][0] ^ 1]) + bent[i][1:]
                assert not verify_inclusion(leaf, m, size, bent, root)
            if proof:
                assert not verify_inclusion(leaf, m, size, proof[:-1], root)
        for old in range(1, size):
            proof = levels.consistency_proof(old, size)
            old_root = levels.root(old)
            assert not verify_consistency(old, size, root, root, proof)
            assert not verify_consistency(old, size, old_root, leaf_hash(b"x"), proof)
            assert not verify_consistency(old, size, old_root, root, proof[:-1])
            assert not verify_consistency(old, size, old_root, root, [])


def test_a_compact_range_extends_to_the_same_roots_as_the_full_tree() -> None:
    rng = random.Random(5)
    entries = [rng.randbytes(16) for _ in range(300)]
    compact, levels = CompactRange(), MerkleLevels()
    for n, entry in enumerate(entries, start=1):
        compact.append(leaf_hash(entry))
        levels.append(leaf_hash(entry))
        assert compact.root() == levels.root() == _mth(entries[:n])
        assert len(compact.peaks) == n.bit_count()
