"""One parser per file type; each turns bytes into a ``ParsedDocument``.

A parser keeps the document's own structure (headings, paragraphs, list items,
tables, pages) because chunks are cut along it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from appliance.ingest.errors import IngestError
from appliance.ingest.parsers import docx, html, markdown, pdf, text
from appliance.records import ParsedDocument

Parser = Callable[[Path, bytes], ParsedDocument]

PARSERS: dict[str, Parser] = {
    ".md": markdown.parse,
    ".markdown": markdown.parse,
    ".txt": text.parse,
    ".html": html.parse,
    ".htm": html.parse,
    ".pdf": pdf.parse,
    ".docx": docx.parse,
}


def parser_for(path: Path) -> Parser:
    try:
        return PARSERS[path.suffix.lower()]
    except KeyError:
        supported = ", ".join(sorted(PARSERS))
        raise IngestError(
            path,
            f"unsupported file type {path.suffix or '(no extension)'!r}",
            f"Convert it to one of: {supported}.",
        ) from None
