"""PDF text layers through pdfplumber, with pages and tables kept.

Why pdfplumber: it exposes every character with its font size and position, finds
ruled tables, and lets text inside those tables be excluded from the running text,
so a table becomes one Markdown table and not a jumble of cells. A page with no text
layer but an image (a scan) is read by OCR (``appliance/ingest/ocr.py``) when Tesseract
is installed, and keeps the recogniser's confidence; without it a scanned PDF is refused
with the reason.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pdfplumber
from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
from pdfminer.pdfparser import PDFSyntaxError
from pdfplumber.utils.exceptions import PdfminerException

from appliance.ingest.errors import IngestError
from appliance.ingest.ocr import RESOLUTION, OcrUnavailable, ReadPage, read_page
from appliance.ingest.parse_limits import LimitExceeded, check_pages
from appliance.ingest.textbuilder import TextBuilder
from appliance.records import BlockKind, ParsedDocument

_LIST_ITEM = re.compile(r"^(?:[-*\u2022\u25cf]|\d{1,3}[.)]|\([a-z0-9]{1,3}\))\s+")
_HEADING_SCALE = 1.15


def _outside(bboxes: list[tuple[float, float, float, float]]) -> Any:
    def keep(obj: dict[str, Any]) -> bool:
        if obj.get("object_type") != "char":
            return True
        x = (obj["x0"] + obj["x1"]) / 2
        y = (obj["top"] + obj["bottom"]) / 2
        return not any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in bboxes)

    return keep


def _open(path: Path, raw: bytes) -> pdfplumber.PDF:
    try:
        pdf = pdfplumber.open(io.BytesIO(raw))
        _ = pdf.pages  # forces the document structure to be read
        return pdf
    except (PDFPasswordIncorrect, PDFEncryptionError) as error:
        raise IngestError(
            path, "the PDF is encrypted", "Remove the password and ingest it again."
        ) from error
    except PdfminerException as error:
        cause = error.args[0] if error.args else error
        if isinstance(cause, PDFPasswordIncorrect | PDFEncryptionError):
            raise IngestError(
                path, "the PDF is encrypted", "Remove the password and ingest it again."
            ) from error
        raise IngestError(path, f"the PDF is corrupt or unreadable ({cause!r})") from error
    except (PDFSyntaxError, ValueError, KeyError, TypeError) as error:
        raise IngestError(path, f"the PDF is corrupt or unreadable ({error!r})") from error


def parse(path: Path, raw: bytes) -> ParsedDocument:
    with _open(path, raw) as pdf:
        try:
            return _parse_pages(path, pdf)
        except (IngestError, LimitExceeded):
            raise
        except Exception as error:  # pdfminer raises many types on damaged content streams
            raise IngestError(path, f"the PDF is corrupt or unreadable ({error!r})") from error


def _parse_pages(path: Path, pdf: pdfplumber.PDF) -> ParsedDocument:
    check_pages(len(pdf.pages))
    pages = []
    scanned: dict[int, ReadPage] = {}
    for page in pdf.pages:
        tables = page.find_tables()
        text_page = page.filter(_outside([t.bbox for t in tables]))
        lines = text_page.extract_text_lines(return_chars=True)
        if not lines and not tables and page.images:
            scanned[page.page_number] = _read_scan(path, page)
        pages.append((page.page_number, tables, lines))
    sizes = Counter(
        round(c["size"], 1)
        for _number, _tables, lines in pages
        for line in lines
        for c in line["chars"]
        if c["text"].strip()
    )
    if not sizes and not scanned and not any(tables for _number, tables, _lines in pages):
        raise IngestError(
            path,
            "the PDF has no text layer (a scanned or image-only document)",
            "Run it through OCR first, then ingest the result.",
        )
    # Body text is the most common size outside tables; larger sizes are headings,
    # the largest being level 1.
    body_size = sizes.most_common(1)[0][0] if sizes else 0.0
    heading_sizes = sorted((s for s in sizes if s >= body_size * _HEADING_SCALE), reverse=True)
    levels = {size: rank for rank, size in enumerate(heading_sizes, start=1)}
    builder = TextBuilder()
    title = (pdf.metadata or {}).get("Title") or None
    for number, tables, lines in pages:
        if number in scanned:
            for kind, text in scanned[number].blocks:
                builder.add(kind, text, page=number, level=2 if kind == "heading" else 0)
                if kind == "heading" and title is None:
                    title = text
            continue
        items: list[tuple[float, BlockKind, Any, int]] = [
            (t.bbox[1], "table", t, 0) for t in tables
        ]
        items.extend(_paragraphs(lines, body_size, levels))
        for _top, kind, content, level in sorted(items, key=lambda item: item[0]):
            if kind == "table":
                builder.add_table(content.extract(), page=number)
            else:
                builder.add(kind, content, page=number, level=level)
                if kind == "heading" and title is None:
                    title = content
    parsed = builder.build(title=title if isinstance(title, str) else None)
    read = {number: page.confidence for number, page in scanned.items()}
    return dataclasses.replace(parsed, ocr_confidence=read) if read else parsed


def _read_scan(path: Path, page: Any) -> ReadPage:
    """A page that is only an image, read by OCR."""
    try:
        return read_page(page.to_image(resolution=RESOLUTION).original)
    except OcrUnavailable as error:
        raise IngestError(
            path,
            f"page {page.page_number} has no text layer (a scanned page) and {error}",
            "Install tesseract-ocr, or run the PDF through OCR first, then ingest it.",
        ) from error


def _paragraphs(
    lines: list[dict[str, Any]], body_size: float, levels: dict[float, int]
) -> list[tuple[float, BlockKind, str, int]]:
    """Group text lines into headings, list items and paragraphs by size and spacing."""
    result: list[tuple[float, BlockKind, str, int]] = []
    current: list[str] = []
    current_top = 0.0
    previous_bottom: float | None = None
    heading: tuple[float, list[str], int] | None = None

    def flush() -> None:
        nonlocal heading
        if current:
            text = " ".join(current)
            kind: BlockKind = "list_item" if _LIST_ITEM.match(text) else "paragraph"
            result.append((current_top, kind, text, 0))
            current.clear()
        if heading is not None:
            result.append((heading[0], "heading", " ".join(heading[1]), heading[2]))
            heading = None

    for line in lines:
        text = line["text"].strip()
        if not text:
            continue
        size = round(max((c["size"] for c in line["chars"]), default=body_size), 1)
        height = line["bottom"] - line["top"]
        gap = 0.0 if previous_bottom is None else line["top"] - previous_bottom
        previous_bottom = line["bottom"]
        if size in levels:
            level = levels[size]
            if heading is not None and heading[2] == level and gap <= 0.6 * height:
                heading[1].append(text)  # a heading wrapped over two lines
                continue
            flush()
            heading = (line["top"], [text], level)
            continue
        if heading is not None or (current and (gap > 0.6 * height or _LIST_ITEM.match(text))):
            flush()
        if not current:
            current_top = line["top"]
        current.append(text)
    flush()
    return result
