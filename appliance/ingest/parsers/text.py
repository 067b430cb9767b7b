"""Plain text: decoded strictly, structured by blank lines and simple heading cues."""

from __future__ import annotations

import re
from pathlib import Path

import charset_normalizer
import frontmatter

from appliance.ingest.errors import IngestError
from appliance.ingest.textbuilder import TextBuilder
from appliance.records import ParsedDocument

_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)]|\([a-z0-9]{1,3}\))\s+")
_NUMBERED_HEADING = re.compile(r"^\d+(?:\.\d+)*\.?\s+[A-Z][^.!?]{0,80}$")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")


def decode(path: Path, raw: bytes) -> str:
    """UTF-8 (with or without BOM) or UTF-16 with BOM, and nothing else.

    Legacy 8-bit encodings are refused rather than guessed: a guess that reads
    "0,5 µg" as "0,5 Âµg" would put a wrong dose into a cited answer.
    """
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = raw.decode("utf-16")
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            best = charset_normalizer.from_bytes(raw).best()
            looks_like = f" (it looks like {best.encoding})" if best is not None else ""
            raise IngestError(
                path,
                f"the file is not valid UTF-8{looks_like}: byte {error.start} cannot be decoded",
                "Save it as UTF-8 and ingest it again.",
            ) from None
    if _CONTROL.search(text):
        raise IngestError(
            path, "the file contains binary control characters", "Is it really a text file?"
        )
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(path: Path, text: str) -> tuple[dict[str, object], str]:
    """YAML front matter between ``---`` lines, as in Markdown documents."""
    if not text.startswith("---"):
        return {}, text
    try:
        post = frontmatter.loads(text)
    except Exception as error:  # the YAML library raises many types
        raise IngestError(path, f"the front matter is not valid YAML ({error})") from error
    return dict(post.metadata), post.content


def parse(path: Path, raw: bytes) -> ParsedDocument:
    front_matter, body = split_front_matter(path, decode(path, raw))
    builder = TextBuilder()
    for paragraph in re.split(r"\n\s*\n", body):
        lines = [line.strip() for line in paragraph.strip().split("\n") if line.strip()]
        if not lines:
            continue
        if len(lines) == 1 and _is_heading(lines[0]):
            builder.add("heading", lines[0].rstrip(":"), level=1)
            continue
        if all(_LIST_ITEM.match(line) for line in lines):
            for line in lines:
                builder.add("list_item", line)
            continue
        builder.add("paragraph", " ".join(lines))
    return builder.build(front_matter=front_matter)


def _is_heading(line: str) -> bool:
    if len(line) > 90:
        return False
    letters = [c for c in line if c.isalpha()]
    shouting = len(letters) >= 3 and all(c.isupper() for c in letters)
    return (
        shouting or bool(_NUMBERED_HEADING.match(line)) or (line.endswith(":") and len(line) < 60)
    )
