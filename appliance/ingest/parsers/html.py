"""HTML pages through selectolax (the Lexbor engine).

Why selectolax: a fast, standards-compliant HTML5 parser with CSS selectors; it
tolerates the malformed markup intranet pages are full of.
"""

from __future__ import annotations

from pathlib import Path

from selectolax.lexbor import LexborHTMLParser, LexborNode

from appliance.ingest.errors import IngestError
from appliance.ingest.parsers.text import decode
from appliance.ingest.textbuilder import TextBuilder
from appliance.records import ParsedDocument

_BLOCKS = "h1, h2, h3, h4, h5, h6, p, li, table, pre, blockquote, dt, dd"
_CONTAINERS = {"li", "table", "pre", "blockquote"}
_NOISE = "script, style, nav, header, footer, noscript, template, form"


def _inside_container(node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in _CONTAINERS:
            return True
        parent = parent.parent
    return False


def _table_rows(table: LexborNode) -> list[list[str | None]]:
    return [[cell.text(separator=" ") for cell in tr.css("th, td")] for tr in table.css("tr")]


def parse(path: Path, raw: bytes) -> ParsedDocument:
    tree = LexborHTMLParser(decode(path, raw))
    if tree.body is None:
        raise IngestError(path, "the HTML has no body")
    for node in tree.css(_NOISE):
        node.decompose()
    title_node = tree.css_first("title")
    title = title_node.text(strip=True) if title_node else None
    builder = TextBuilder()
    for node in tree.body.css(_BLOCKS):
        if _inside_container(node):
            continue
        tag = node.tag
        if tag == "table":
            builder.add_table(_table_rows(node))
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            builder.add("heading", node.text(separator=" "), level=int(tag[1]))
        elif tag == "li":
            builder.add("list_item", "- " + node.text(separator=" "))
        elif tag == "pre":
            builder.add("code", node.text(deep=True))
        else:
            builder.add("paragraph", node.text(separator=" "))
    return builder.build(title=title)
