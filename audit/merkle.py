"""The Merkle tree of RFC 6962 / RFC 9162 (section 2.1), SHA-256.

leaf hash = H(0x00 || entry), node hash = H(0x01 || left || right); the tree over n
leaves splits at the largest power of two below n. ``CompactRange`` keeps the O(log n)
perfect-subtree roots needed to extend the tree one leaf at a time (appending and
verifying never hold the whole tree); ``MerkleLevels`` keeps every perfect subtree of
a stored log so that any proof needs only O(log^2 n) lookups.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly smaller than n (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class CompactRange:
    """The roots of the perfect subtrees that make up a tree of ``size`` leaves,
    largest (leftmost) first: enough to append a leaf and to compute the root."""

    def __init__(self, size: int = 0, peaks: Sequence[bytes] = ()) -> None:
        if len(peaks) != size.bit_count():
            raise ValueError(
                f"a tree of {size} leaves has {size.bit_count()} peaks, not {len(peaks)}"
            )
        self.size = size
        self.peaks = list(peaks)

    def append(self, leaf: bytes) -> None:
        self.peaks.append(leaf)
        merges = (self.size ^ (self.size + 1)).bit_length() - 1  # trailing ones of size
        for _ in range(merges):
            right = self.peaks.pop()
            self.peaks[-1] = node_hash(self.peaks[-1], right)
        self.size += 1

    def root(self) -> bytes:
        if not self.peaks:
            return EMPTY_ROOT
        root = self.peaks[-1]
        for peak in reversed(self.peaks[:-1]):
            root = node_hash(peak, root)
        return root

    def copy(self) -> CompactRange:
        return CompactRange(self.size, self.peaks)


class MerkleLevels:
    """Every perfect subtree of a growing tree: level k holds the roots of the aligned
    runs of 2**k leaves. About 2n hashes for n leaves."""

    def __init__(self) -> None:
        self.levels: list[list[bytes]] = [[]]

    @property
    def size(self) -> int:
        return len(self.levels[0])

    def append(self, leaf: bytes) -> None:
        self.levels[0].append(leaf)
        level = 0
        while len(self.levels[level]) % 2 == 0:
            below = self.levels[level]
            if level + 1 == len(self.levels):
                self.levels.append([])
            self.levels[level + 1].append(node_hash(below[-2], below[-1]))
            level += 1

    def subtree(self, start: int, end: int) -> bytes:
        """The root of leaves [start, end), as RFC 6962 defines it for that range."""
        width = end - start
        if width <= 0 or end > self.size:
            raise ValueError(f"no subtree [{start}, {end}) in a tree of {self.size}")
        level = width.bit_length() - 1
        if width == 1 << level and start % width == 0:
            return self.levels[level][start >> level]
        k = _split(width)
        return node_hash(self.subtree(start, start + k), self.subtree(start + k, end))

    def root(self, size: int | None = None) -> bytes:
        size = self.size if size is None else size
        return EMPTY_ROOT if size == 0 else self.subtree(0, size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        """RFC 6962 PATH(index, D[0:size])."""
        if not 0 <= index < size <= self.size:
            raise ValueError(f"no leaf {index} in a tree of {size} (log has {self.size})")
        return self._path(index, 0, size)

    def _path(self, index: int, start: int, end: int) -> list[bytes]:
        if end - start == 1:
            return []
        k = _split(end - start)
        if index < start + k:
            return [*self._path(index, start, start + k), self.subtree(start + k, end)]
        return [*self._path(index, start + k, end), self.subtree(start, start + k)]

    def consistency_proof(self, old_size: int, new_size: int) -> list[bytes]:
        """RFC 6962 PROOF(old_size, D[0:new_size])."""
        if not 0 < old_size <= new_size <= self.size:
            raise ValueError(
                f"no consistency proof from {old_size} to {new_size} (log has {self.size})"
            )
        return self._subproof(old_size, 0, new_size, True)

    def _subproof(self, m: int, start: int, end: int, whole: bool) -> list[bytes]:
        n = end - start
        if m == n:
            return [] if whole else [self.subtree(start, end)]
        k = _split(n)
        if m <= k:
            return [*self._subproof(m, start, start + k, whole), self.subtree(start + k, end)]
        return [*self._subproof(m - k, start + k, end, False), self.subtree(start, start + k)]


def verify_inclusion(
    leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 section 2.1.3.2."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 section 2.1.4.2."""
    if old_size == new_size:
        return not proof and old_root == new_root
    if not 0 < old_size < new_size or not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root starts the path
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root
