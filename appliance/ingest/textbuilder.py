"""Builds a document's normalised text block by block, recording exact offsets.

Every parser emits blocks through this builder, so ``text[block.start:block.end]``
is the block's text by construction and chunk offsets can never drift.
"""

from __future__ import annotations

import re

from appliance.ingest.parse_limits import check_progress
from appliance.records import Block, BlockKind, ParsedDocument

BLOCK_SEPARATOR = "\n\n"
_SPACES = re.compile(r"[ \t\r\f\v\u00a0\u2000-\u200b\u202f\u205f\u3000]+")


def clean_inline(text: str) -> str:
    """Collapse every run of whitespace (newlines included) to one space."""
    return " ".join(_SPACES.sub(" ", text).split())


def markdown_table(rows: list[list[str]]) -> str:
    """Render rows (the first is the header) as a Markdown table."""
    width = max(len(row) for row in rows)
    cells = [
        [clean_inline(c).replace("|", "\\|") for c in row] + [""] * (width - len(row))
        for row in rows
    ]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines)


class TextBuilder:
    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._blocks: list[Block] = []

    def add(self, kind: BlockKind, text: str, *, page: int | None = None, level: int = 0) -> None:
        text = text.strip() if kind in ("table", "code") else clean_inline(text)
        if not text:
            return
        if self._parts:
            self._parts.append(BLOCK_SEPARATOR)
            self._length += len(BLOCK_SEPARATOR)
        start = self._length
        header_end = None
        if kind == "table":
            lines = text.split("\n")
            header_end = start + len(lines[0]) + 1 + len(lines[1]) if len(lines) > 1 else None
        self._parts.append(text)
        self._length += len(text)
        self._blocks.append(Block(kind, start, self._length, page, level, header_end))
        check_progress(len(self._blocks), self._length)

    def add_table(self, rows: list[list[str | None]], *, page: int | None = None) -> None:
        rows_text = [[c or "" for c in row] for row in rows if any((c or "").strip() for c in row)]
        if rows_text:
            self.add("table", markdown_table(rows_text), page=page)

    def build(
        self, title: str | None = None, front_matter: dict[str, object] | None = None
    ) -> ParsedDocument:
        return ParsedDocument("".join(self._parts), tuple(self._blocks), title, front_matter or {})
