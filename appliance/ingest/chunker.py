"""Cuts a parsed document into citable chunks along its own structure.

Rules, in order: a heading closes the current chunk and updates the heading path; a
table is chunked on its own, split by rows when long, each later part repeating the
header row as context; a numbered clause (``14.2 ...``) starts a new chunk; blocks of
one section are packed together up to ``max_chars``; a block longer than that is
split at sentence boundaries. Every chunk is an exact span of the normalised text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from appliance.records import Block, Chunk, DocumentMetadata, ParsedDocument

CHUNKER_VERSION = "1"
_CLAUSE_START = re.compile(r"^(?:\d+\.\d+(?:\.\d+)*|§\s*\d+)[\s.)(]")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z0-9(\"'])")
_ABBREVIATIONS = {
    "e.g",
    "i.e",
    "dr",
    "approx",
    "vs",
    "etc",
    "fig",
    "no",
    "mr",
    "mrs",
    "ms",
    "st",
    "cf",
    "al",
}


@dataclass(slots=True)
class _Span:
    start: int
    end: int
    page: int | None
    context: str = ""


def sentence_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Sentence boundaries within text[start:end], skipping common abbreviations."""
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        word = (
            text[cursor : match.start()].rsplit(None, 1)[-1].lower()
            if text[cursor : match.start()].strip()
            else ""
        )
        if word.rstrip(".") in _ABBREVIATIONS or re.fullmatch(r"[a-z]", word):
            continue
        yield cursor, match.start() + 1
        cursor = match.end()
    if cursor < end:
        yield cursor, end


class Chunker:
    def __init__(self, max_chars: int = 1200) -> None:
        self.max_chars = max_chars

    def chunk(
        self, parsed: ParsedDocument, metadata: DocumentMetadata, source_sha256: str
    ) -> list[Chunk]:
        text = parsed.text
        chunks: list[Chunk] = []
        seen: dict[str, int] = {}
        headings: list[tuple[int, str]] = []
        pending: list[Block] = []

        def emit(span: _Span) -> None:
            piece = text[span.start : span.end]
            path = tuple(h for _level, h in headings)
            key = "\x1f".join((*path, span.context, piece))
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            digest = hashlib.sha256(f"{key}\x1f{occurrence}".encode()).hexdigest()[:12]
            chunks.append(
                Chunk(
                    chunk_id=f"{metadata.doc_id}@{metadata.version}#{digest}",
                    doc_id=metadata.doc_id,
                    ordinal=len(chunks),
                    text=piece,
                    start=span.start,
                    end=span.end,
                    heading_path=path,
                    page=span.page,
                    source_sha256=source_sha256,
                    metadata=metadata,
                    context=span.context,
                )
            )

        def flush() -> None:
            if pending:
                emit(_Span(pending[0].start, pending[-1].end, pending[0].page))
                pending.clear()

        for block in parsed.blocks:
            size = block.end - block.start
            if block.kind == "heading":
                flush()
                while headings and headings[-1][0] >= block.level:
                    headings.pop()
                headings.append((block.level, text[block.start : block.end]))
            elif block.kind == "table":
                flush()
                for span in self._table_spans(text, block):
                    emit(span)
            elif size > self.max_chars:
                flush()
                for span in self._sentence_packed(text, block):
                    emit(span)
            else:
                starts_clause = bool(_CLAUSE_START.match(text[block.start : block.end]))
                too_big = pending and block.end - pending[0].start > self.max_chars
                if pending and (too_big or starts_clause):
                    flush()
                pending.append(block)
        flush()
        return chunks

    def _sentence_packed(self, text: str, block: Block) -> Iterator[_Span]:
        start: int | None = None
        end = block.start
        for s_start, s_end in self._bounded_sentences(text, block.start, block.end):
            if start is not None and s_end - start > self.max_chars:
                yield _Span(start, end, block.page)
                start = None
            if start is None:
                start = s_start
            end = s_end
        if start is not None:
            yield _Span(start, end, block.page)

    def _bounded_sentences(self, text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
        """Sentences, with any sentence longer than max_chars cut at whitespace."""
        for s_start, s_end in sentence_spans(text, start, end):
            while s_end - s_start > self.max_chars:
                cut = text.rfind(" ", s_start, s_start + self.max_chars)
                cut = cut if cut > s_start else s_start + self.max_chars
                yield s_start, cut
                s_start = cut + 1 if text[cut] == " " else cut
            if s_end > s_start:
                yield s_start, s_end

    def _table_spans(self, text: str, block: Block) -> Iterator[_Span]:
        if block.end - block.start <= self.max_chars or block.header_end is None:
            yield _Span(block.start, block.end, block.page)
            return
        header = text[block.start : block.header_end]
        rows_start = block.header_end + 1
        first = True
        span_start = block.start
        cursor = rows_start
        while cursor < block.end:
            line_end = text.find("\n", cursor, block.end)
            line_end = block.end if line_end == -1 else line_end
            if (
                line_end - span_start > self.max_chars
                and cursor > rows_start
                and cursor > span_start
            ):
                yield _Span(span_start, cursor - 1, block.page, "" if first else header)
                first = False
                span_start = cursor
            cursor = line_end + 1
        yield _Span(span_start, block.end, block.page, "" if first else header)
