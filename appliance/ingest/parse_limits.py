"""Bounds on what one document may cost to read.

A small file can unpack into a very large one (a 142 KB Word file holding a million
paragraphs), and a parser's time grows with what it unpacks, not with the file. So the
limits are on what parsing produces and how long it runs: unpacked bytes, pages, blocks,
text, seconds. They hold for every parser: the block, text and time limits are checked
as each block is added (``TextBuilder``), the unpacked-size and page limits before the
parser starts. Passing a limit is an ``IngestError`` that says which limit and how to
raise it; nothing of the document is written.
"""

from __future__ import annotations

import contextvars
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParseLimits:
    max_unpacked_bytes: int = 64 * 1024 * 1024
    max_pages: int = 2_000
    max_blocks: int = 50_000
    max_text_chars: int = 5_000_000
    max_seconds: float = 120.0


class LimitExceeded(Exception):
    """Raised inside a parser when the document passes one of its limits."""

    def __init__(self, what: str, setting: str) -> None:
        super().__init__(what)
        self.what = what
        self.setting = setting


@dataclass(slots=True)
class _Budget:
    limits: ParseLimits
    deadline: float


_current: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "parse_budget", default=None
)


@contextmanager
def parse_budget(limits: ParseLimits) -> Iterator[None]:
    """The limits for the parse run inside this block (per document)."""
    token = _current.set(_Budget(limits, time.monotonic() + limits.max_seconds))
    try:
        yield
    finally:
        _current.reset(token)


def current_limits() -> ParseLimits:
    budget = _current.get()
    return ParseLimits() if budget is None else budget.limits


def check_progress(blocks: int, chars: int) -> None:
    """Called as a parser emits each block."""
    budget = _current.get()
    limits = current_limits()
    if blocks > limits.max_blocks:
        raise LimitExceeded(f"more than {limits.max_blocks:,} blocks", "MAX_BLOCKS")
    if chars > limits.max_text_chars:
        raise LimitExceeded(f"more than {limits.max_text_chars:,} characters", "MAX_TEXT_CHARS")
    if budget is not None and time.monotonic() > budget.deadline:
        raise LimitExceeded(f"reading took over {limits.max_seconds:g} s", "MAX_SECONDS")


def check_pages(pages: int) -> None:
    limits = current_limits()
    if pages > limits.max_pages:
        raise LimitExceeded(f"{pages:,} pages, over {limits.max_pages:,}", "MAX_PAGES")


def check_zip(archive: zipfile.ZipFile, paragraph_tags: tuple[bytes, ...] = ()) -> None:
    """An Office file before it is parsed: what it unpacks to, and (streamed, without
    building any tree) how many paragraphs its main part holds."""
    limits = current_limits()
    unpacked = sum(info.file_size for info in archive.infolist())
    if unpacked > limits.max_unpacked_bytes:
        raise LimitExceeded(
            f"it unpacks to {unpacked:,} bytes, over {limits.max_unpacked_bytes:,}",
            "MAX_UNPACKED_BYTES",
        )
    if not paragraph_tags:
        return
    longest = max(len(tag) for tag in paragraph_tags)
    paragraphs, read, carry = 0, 0, b""
    for info in archive.infolist():
        if not info.filename.endswith(".xml"):
            continue
        with archive.open(info) as part:
            while piece := part.read(1 << 20):
                read += len(piece)  # the declared sizes may lie: count what comes out
                if read > limits.max_unpacked_bytes:
                    raise LimitExceeded(
                        f"it unpacks to over {limits.max_unpacked_bytes:,} bytes",
                        "MAX_UNPACKED_BYTES",
                    )
                window = carry + piece
                for tag in paragraph_tags:  # a tag cut by the read is counted once
                    paragraphs += window.count(tag) - carry.count(tag)
                carry = window[-(longest - 1) :]
                if paragraphs > limits.max_blocks:
                    raise LimitExceeded(f"more than {limits.max_blocks:,} paragraphs", "MAX_BLOCKS")
