"""Word documents through python-docx.

Why python-docx: it reads the document's own structure, paragraph styles (Heading N,
List ...) and tables, in body order, without converting to another format first.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table
from docx.text.paragraph import Paragraph

from appliance.ingest.errors import IngestError
from appliance.ingest.parse_limits import check_zip
from appliance.ingest.textbuilder import TextBuilder
from appliance.records import ParsedDocument


def _is_list_item(paragraph: Paragraph, style: str) -> bool:
    if style.startswith("List"):
        return True
    properties = paragraph._p.pPr  # numbering lives in the paragraph properties
    return properties is not None and properties.numPr is not None


def parse(path: Path, raw: bytes) -> ParsedDocument:
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            check_zip(archive, paragraph_tags=(b"<w:p>", b"<w:p "))
        document = docx.Document(io.BytesIO(raw))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as error:
        raise IngestError(
            path, f"not a readable Word document ({error})", "Is it a .docx saved by Word?"
        ) from error
    builder = TextBuilder()
    title = document.core_properties.title or None
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            builder.add_table([[cell.text for cell in row.cells] for row in item.rows])
            continue
        style = item.style.name if item.style is not None else ""
        text = item.text
        if style == "Title" or style.startswith("Heading"):
            level = int(style.split()[-1]) if style[-1:].isdigit() else 1
            builder.add("heading", text, level=level)
            title = title or text.strip() or None
        elif _is_list_item(item, style):
            builder.add("list_item", "- " + text)
        else:
            builder.add("paragraph", text)
    return builder.build(title=title)
