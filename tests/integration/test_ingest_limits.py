"""What one document may cost to read: unpacked size, paragraphs, pages, text and time
are bounded, a document over a limit is refused with the limit named, and nothing of it
reaches any store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fpdf import FPDF

from appliance.engines import Appliance
from appliance.settings import Limits
from tests.bombs import docx_bomb
from tests.conftest import make_settings


def two_page_pdf() -> bytes:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in ("First page of the protocol.", "Second page of the protocol."):
        pdf.add_page()
        pdf.cell(text=text)
    return bytes(pdf.output())


def _ingest(tmp_path: Path, name: str, raw: bytes, limits: Limits | None = None) -> str:
    folder = tmp_path / "upload"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(raw)
    settings = make_settings(tmp_path / "data", limits=limits or Limits())
    with Appliance(settings) as appliance:
        report = appliance.ingestor.ingest([folder / name])
        [outcome] = report.outcomes
        assert outcome.status == "failed"
        assert appliance.catalog.pending() == []
        assert appliance.lexical.count() == 0  # nothing of it in any store
        assert appliance.vectors.count() == 0
        return outcome.error or ""


def test_a_small_word_file_holding_a_million_paragraphs_is_refused_quickly(
    tmp_path: Path,
) -> None:
    raw = docx_bomb(1_000_000)
    assert len(raw) < 1_000_000  # small on disk, ~60 MB of XML inside
    started = time.monotonic()
    error = _ingest(tmp_path, "bomb.docx", raw)
    assert "too large to read" in error and "MAX_BLOCKS" in error
    assert time.monotonic() - started < 120  # not the half hour it used to take


def test_a_word_file_that_unpacks_past_the_limit_is_refused(tmp_path: Path) -> None:
    limits = Limits(max_unpacked_bytes=1_000_000)
    error = _ingest(tmp_path, "big.docx", docx_bomb(20_000), limits)
    assert "unpacks to" in error and "MAX_UNPACKED_BYTES" in error


def test_blocks_text_pages_and_time_are_bounded_for_every_parser(tmp_path: Path) -> None:
    items = "".join(f"- item {n}\n" for n in range(300)).encode()
    assert "MAX_BLOCKS" in _ingest(
        tmp_path, "list.md", b"# List\n\n" + items, Limits(max_blocks=100)
    )
    long_text = b"# Long\n\n" + b"word " * 50_000
    assert "MAX_TEXT_CHARS" in _ingest(
        tmp_path, "long.txt", long_text, Limits(max_text_chars=100_000)
    )
    assert "MAX_PAGES" in _ingest(tmp_path, "two.pdf", two_page_pdf(), Limits(max_pages=1))
    html = b"<html><body>" + b"<p>paragraph</p>" * 2000 + b"</body></html>"
    assert "MAX_SECONDS" in _ingest(tmp_path, "slow.html", html, Limits(max_seconds=1e-9))


@pytest.mark.parametrize("limit", ["max_blocks", "max_pages", "max_seconds"])
def test_limits_must_be_positive(limit: str) -> None:
    with pytest.raises(ValueError):
        Limits(**{limit: 0})
