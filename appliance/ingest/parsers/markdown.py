"""Markdown, with YAML front matter, through markdown-it-py.

Why markdown-it-py: a CommonMark-compliant parser that gives a token stream with
source line maps, so headings, list items and tables come out as structure rather
than as rendered HTML that would have to be parsed again.
"""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from appliance.ingest.parsers.text import decode, split_front_matter
from appliance.ingest.textbuilder import TextBuilder
from appliance.records import ParsedDocument

_MARKDOWN = MarkdownIt("commonmark").enable("table")


def _inline_text(token: Token) -> str:
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def parse(path: Path, raw: bytes) -> ParsedDocument:
    front_matter, body = split_front_matter(path, decode(path, raw))
    tokens = _MARKDOWN.parse(body)
    builder = TextBuilder()
    title: str | None = None
    list_markers: list[str] = []  # one entry per open list item: its visible marker
    table_rows: list[list[str]] | None = None
    row: list[str] = []
    heading_level = 0
    in_paragraph = False
    for token in tokens:
        kind = token.type
        if kind == "heading_open":
            heading_level = int(token.tag[1])
        elif kind == "list_item_open":
            ordered = token.markup in (".", ")")
            list_markers.append(f"{token.info}{token.markup} " if ordered else "- ")
        elif kind == "list_item_close":
            list_markers.pop()
        elif kind == "paragraph_open":
            in_paragraph = True
        elif kind == "paragraph_close":
            in_paragraph = False
        elif kind == "table_open":
            table_rows = []
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and table_rows is not None:
            table_rows.append(row)
        elif kind == "table_close" and table_rows is not None:
            builder.add_table(table_rows)  # type: ignore[arg-type]
            table_rows = None
        elif kind in ("fence", "code_block"):
            builder.add("code", token.content)
        elif kind == "inline":
            content = _inline_text(token)
            if table_rows is not None:
                row.append(content)
            elif heading_level:
                builder.add("heading", content, level=heading_level)
                if title is None and heading_level == 1:
                    title = content.strip()
                heading_level = 0
            elif list_markers and in_paragraph:
                builder.add("list_item", list_markers[-1] + content)
                list_markers[-1] = " " * len(list_markers[-1])  # continuation paragraphs
            elif in_paragraph:
                builder.add("paragraph", content)
    return builder.build(title=title, front_matter=front_matter)
