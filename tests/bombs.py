"""Small files that unpack or parse into something huge: seeds for the limit tests and the
parser fuzzing."""

from __future__ import annotations

import io
import zipfile

from tests.conftest import SAMPLE_CORPUS

PARAGRAPH = b"<w:p><w:r><w:t>Check the fridge temperature.</w:t></w:r></w:p>"


def docx_bomb(paragraphs: int) -> bytes:
    """A real Word file whose body holds ``paragraphs`` paragraphs: a few hundred KB
    that unpack to tens of megabytes of XML."""
    source = zipfile.ZipFile(SAMPLE_CORPUS / "delirium-screening.docx")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bomb:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/document.xml":
                head, _, rest = data.partition(b"<w:body>")
                tail = rest[rest.index(b"<w:sectPr") :]
                data = head + b"<w:body>" + PARAGRAPH * paragraphs + tail
            bomb.writestr(info, data)
    return out.getvalue()


def html_bomb(depth: int) -> bytes:
    """Elements nested ``depth`` deep: one parser recursion per level."""
    return b"<html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"


def markdown_bomb(items: int) -> bytes:
    """A list of ``items`` items under one heading: a block per item."""
    return b"# List\n\n" + b"".join(b"- item %d\n" % n for n in range(items))
