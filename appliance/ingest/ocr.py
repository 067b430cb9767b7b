"""Reading a scanned page: Tesseract (Debian's ``tesseract-ocr``) through pytesseract,
word by word with the recogniser's confidence, put back into the paragraphs it found.

A page read this way is only as good as the scan, so each page keeps its mean word
confidence (0-100): the document's metadata carries it, and an answer that cites a page
read with low confidence says so beside the citation (``Settings.ingest``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

import pytesseract

from appliance.records import BlockKind

RESOLUTION = 300
"""Dots per inch the page is rendered at for the recogniser (Tesseract reads 300 best)."""


class OcrUnavailable(RuntimeError):
    """No Tesseract on this machine."""


@dataclass(frozen=True, slots=True)
class ReadPage:
    blocks: list[tuple[BlockKind, str]]
    """The page's paragraphs in reading order; a short line alone is a heading."""
    confidence: float
    """The recogniser's mean confidence over the page's words, 0-100."""


def ocr_available() -> bool:
    return shutil.which("tesseract") is not None


def read_page(image: Any, language: str = "eng") -> ReadPage:
    """The words Tesseract finds on ``image`` (a PIL image of one page)."""
    if not ocr_available():
        raise OcrUnavailable("tesseract is not installed (Debian: apt-get install tesseract-ocr)")
    data = pytesseract.image_to_data(image, lang=language, output_type=pytesseract.Output.DICT)
    paragraphs: dict[tuple[int, int], list[list[str]]] = {}
    confidences: list[float] = []
    for word, confidence, block, paragraph, line in zip(
        data["text"], data["conf"], data["block_num"], data["par_num"], data["line_num"],
        strict=True,
    ):  # fmt: skip
        if not str(word).strip() or float(confidence) < 0:
            continue
        confidences.append(float(confidence))
        lines = paragraphs.setdefault((block, paragraph), [])
        if len(lines) < line:
            lines.extend([] for _ in range(line - len(lines)))
        lines[line - 1].append(str(word))
    blocks: list[tuple[BlockKind, str]] = []
    for lines in paragraphs.values():
        text = " ".join(" ".join(words) for words in lines if words)
        kind: BlockKind = "heading" if _looks_like_heading(lines) else "paragraph"
        blocks.append((kind, text))
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return ReadPage(blocks, round(mean, 1))


def _looks_like_heading(lines: list[list[str]]) -> bool:
    words = [w for line in lines for w in line]
    return (
        len([line for line in lines if line]) == 1
        and len(words) <= 8
        and not (words and words[-1].endswith((".", ":", ";", ",")))
    )
