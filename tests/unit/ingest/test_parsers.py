"""Each parser on the shipped sample documents, and every kind of bad input."""

from pathlib import Path

import pytest
from fpdf import FPDF

from appliance.ingest import ocr
from appliance.ingest.errors import IngestError
from appliance.ingest.ocr import ocr_available
from appliance.ingest.parsers import parser_for
from appliance.ingest.parsers.text import decode
from appliance.records import CitedSpan
from tests.conftest import SAMPLE_CORPUS, scanned_pdf


def parse(name: str):
    path = SAMPLE_CORPUS / name
    return parser_for(path)(path, path.read_bytes())


def blocks_of(parsed, kind: str) -> list[str]:
    return [parsed.text[b.start : b.end] for b in parsed.blocks if b.kind == kind]


def test_markdown_keeps_front_matter_headings_lists_and_tables() -> None:
    parsed = parse("insulin-infusion-protocol.md")
    assert parsed.front_matter["doc_id"] == "insulin-infusion-protocol"
    assert "Rate scale" in blocks_of(parsed, "heading")
    [table] = blocks_of(parsed, "table")
    assert table.startswith("| Capillary glucose (mmol/L) | Insulin rate (units/hour) |\n|---|---|")
    assert "| 11.1 to 15.0 | 3 |" in table


def test_markdown_ordered_list_items_keep_their_numbers() -> None:
    items = blocks_of(parse("sepsis-bundle-v4.md"), "list_item")
    assert items[0].startswith("1. Measure serum lactate.")


def test_pdf_keeps_pages_headings_and_tables_as_markdown() -> None:
    parsed = parse("antimicrobial-formulary.pdf")
    assert parsed.title == "Adult Antimicrobial Dosing Formulary"
    assert "2. Beta-lactams" in blocks_of(parsed, "heading")
    tables = blocks_of(parsed, "table")
    assert len(tables) == 2
    assert (
        tables[0].splitlines()[0]
        == "| Drug | Usual dose | CrCl 10-50 mL/min | CrCl below 10 mL/min |"
    )
    assert all(b.page is not None and b.page >= 1 for b in parsed.blocks)
    # Table cells are not repeated in the running text.
    assert not any("every 24 hours |" in p for p in blocks_of(parsed, "paragraph"))


def test_pdf_heading_levels_follow_font_size() -> None:
    parsed = parse("paediatric-emergency-drugs.pdf")
    levels = {parsed.text[b.start : b.end]: b.level for b in parsed.blocks if b.kind == "heading"}
    assert levels["Paediatric Emergency Drug Chart"] == 1
    assert levels["Seizures"] == 2


def test_html_drops_navigation_and_keeps_structure() -> None:
    parsed = parse("visiting-hours.html")
    assert parsed.title == "Visiting Hours and Visitor Guidance"
    assert "Home" not in parsed.text
    assert "- One birth partner may stay at any time, including overnight." in blocks_of(
        parsed, "list_item"
    )
    assert blocks_of(parsed, "table")[0].startswith("| Area | Hours | Visitors at the bedside |")


def test_docx_reads_headings_list_items_and_tables_in_order() -> None:
    parsed = parse("delirium-screening.docx")
    assert blocks_of(parsed, "heading")[:2] == ["Delirium Screening and Management", "Screening"]
    assert "- Urinary retention and constipation." in blocks_of(parsed, "list_item")
    assert blocks_of(parsed, "table")[0].startswith("| 4AT item | Score |")


def test_text_with_front_matter_finds_headings_and_list_items() -> None:
    parsed = parse("chemotherapy-extravasation.txt")
    assert "VESICANT DRUGS" in blocks_of(parsed, "heading")
    assert "- Stop the infusion at once and leave the cannula in place." in blocks_of(
        parsed, "list_item"
    )


# -- bad input -----------------------------------------------------------------------------


def _pdf_bytes(make) -> bytes:
    pdf = FPDF()
    pdf.add_page()
    make(pdf)
    return bytes(pdf.output())


def test_image_only_pdf_is_refused_with_a_remedy(tmp_path: Path) -> None:
    raw = _pdf_bytes(lambda pdf: pdf.rect(20, 20, 100, 100, style="F"))
    with pytest.raises(IngestError, match="no text layer") as error:
        parser_for(tmp_path / "scan.pdf")(tmp_path / "scan.pdf", raw)
    assert "OCR" in str(error.value)


SCAN = ["Blood Transfusion Checklist", "", "Check the identity band against the",
        "prescription before every unit is hung."]  # fmt: skip


@pytest.mark.skipif(
    not ocr_available(), reason="needs Debian's tesseract-ocr (.ci/run installs it)"
)
def test_a_scanned_pdf_is_read_by_ocr_and_keeps_its_confidence(tmp_path: Path) -> None:
    path = tmp_path / "checklist.pdf"
    parsed = parser_for(path)(path, scanned_pdf(SCAN))
    assert parsed.title == "Blood Transfusion Checklist"
    assert "Check the identity band against the prescription before every unit is hung." in (
        blocks_of(parsed, "paragraph")
    )
    assert list(parsed.ocr_confidence) == [1] and parsed.ocr_confidence[1] > 80
    assert all(b.page == 1 for b in parsed.blocks)


def test_a_scanned_pdf_without_tesseract_is_refused_with_the_remedy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ocr, "ocr_available", lambda: False)  # a machine without it
    path = tmp_path / "checklist.pdf"
    with pytest.raises(IngestError, match="page 1 has no text layer") as error:
        parser_for(path)(path, scanned_pdf(SCAN))
    assert "tesseract-ocr" in str(error.value)


def test_a_cited_scan_is_flagged_when_its_reading_is_uncertain() -> None:
    span = CitedSpan("c", "d", "T", "1", "2026-01-01", None, (), 1, 0, 4, "text", 61.0)
    assert span.to_dict()["scan_check"] is True and span.to_dict()["scan_confidence"] == 61.0
    clear = CitedSpan("c", "d", "T", "1", "2026-01-01", None, (), 1, 0, 4, "text", 95.0)
    assert clear.to_dict()["scan_check"] is False
    typed = CitedSpan("c", "d", "T", "1", "2026-01-01", None, (), 1, 0, 4, "text")
    assert "scan_check" not in typed.to_dict()


def test_encrypted_pdf_is_refused(tmp_path: Path) -> None:
    def secret(pdf: FPDF) -> None:
        pdf.set_encryption(owner_password="owner", user_password="user")
        pdf.set_font("Helvetica", size=12)
        pdf.cell(text="secret")

    with pytest.raises(IngestError, match="encrypted"):
        parser_for(tmp_path / "locked.pdf")(tmp_path / "locked.pdf", _pdf_bytes(secret))


def test_corrupt_pdf_is_refused(tmp_path: Path) -> None:
    raw = (SAMPLE_CORPUS / "antimicrobial-formulary.pdf").read_bytes()[:700]
    with pytest.raises(IngestError, match="corrupt|no text layer"):
        parser_for(tmp_path / "broken.pdf")(tmp_path / "broken.pdf", raw)


def test_corrupt_docx_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="not a readable Word document"):
        parser_for(tmp_path / "x.docx")(tmp_path / "x.docx", b"PK\x03\x04 not really a zip")


def test_undecodable_text_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="not valid UTF-8|control characters"):
        decode(tmp_path / "x.txt", bytes(range(256)) * 4)


def test_legacy_encoded_text_is_refused_not_guessed(tmp_path: Path) -> None:
    text = "Le patient reçoit 0,5 µg à l'hôpital chaque matin. " * 5
    with pytest.raises(IngestError, match="not valid UTF-8") as error:
        decode(tmp_path / "x.txt", text.encode("latin-1"))
    assert "Save it as UTF-8" in str(error.value)


def test_utf16_with_bom_and_utf8_with_bom_are_read(tmp_path: Path) -> None:
    text = "Dose: 0,5 µg"
    assert decode(tmp_path / "a.txt", text.encode("utf-16")) == text
    assert decode(tmp_path / "b.txt", text.encode("utf-8-sig")) == text


def test_unsupported_type_names_the_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="unsupported file type '.xlsx'") as error:
        parser_for(tmp_path / "sheet.xlsx")
    assert ".pdf" in str(error.value)
